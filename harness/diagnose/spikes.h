// Events in a run's records, for `lockstep diagnose`: loss spikes, non-finite losses and step-time
// spikes. Torch-free: works on the StepRecords of metrics.jsonl (rank 0) and metrics.rank<r>.jsonl.
//
// Detection (all thresholds in SpikeThresholds, defaults below):
//   * loss spike: the rank-0 (global) loss at step k has a robust z-score >= 6 against the
//     previous 20 steps (stats::rolling_robust_z: (x - median) / (1.4826 * MAD)), AND it rose by
//     at least 3% of that median (so a very flat stretch with a tiny MAD does not turn noise into
//     an event). Only from step 11 on (10 finite predecessors), so the steep start is not judged.
//   * non-finite loss: always an event.
//   * step-time spike, per rank, timed steps only: step_ms has a robust z >= 10 against the
//     previous 50 timed steps of that rank AND is >= 3x their median (wall-clock time on a shared
//     host is heavy-tailed; only a step that is several times slower than usual counts). A rank
//     that stalls shows up here: its own step, and the next step of the ranks that waited for it.
//   * gradient-norm spike (rank 0): grad_norm >= 30x the median of the previous 20 steps (and
//     robust z >= 10). Clipping can hide an exploding gradient from the loss; it is still an event.
// Detections whose steps are at most 2 apart (over every rank) merge into one event, reported at
// its first step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/train/records.h"

namespace lockstep::diagnose {

// A run's per-step records, one series per rank (index = rank), each sorted by step.
struct RunRecords {
  std::vector<std::vector<StepRecord>> ranks;
  const std::vector<StepRecord>& main() const;  // rank 0 (empty if none)
  int64_t world() const { return static_cast<int64_t>(ranks.size()); }
  // The record of `rank` at `step`, or nullptr.
  const StepRecord* at(int64_t rank, int64_t step) const;
};

// Reads RUN_DIR/metrics.jsonl and every RUN_DIR/metrics.rank<r>.jsonl (r = 1, 2, ... while
// present). Throws std::runtime_error naming the file when metrics.jsonl is missing or unreadable.
RunRecords read_run(const std::filesystem::path& run_dir);

struct SpikeThresholds {
  size_t loss_window = 20;       // previous steps the loss is compared with
  size_t loss_min_history = 10;  // finite predecessors needed before a loss can spike
  double loss_z = 6.0;           // robust z of a loss spike
  double loss_min_rise = 0.03;   // and (loss - median) / median at least this
  size_t time_window = 50;       // previous timed steps a step time is compared with
  size_t time_min_history = 10;
  double time_z = 10.0;
  double time_ratio = 3.0;  // step_ms / median at least this
  size_t grad_window = 20;
  double grad_ratio = 30.0;  // grad_norm / median at least this
  double grad_z = 10.0;
  int64_t merge_gap = 2;  // detections at most this many steps apart form one event
};

// One step that crossed a threshold.
struct Detection {
  std::string kind;  // "loss" | "nonfinite" | "step_time" | "grad_norm"
  int64_t step = 0;
  int64_t rank = 0;
  double value = 0;   // the loss / step_ms / grad_norm (NaN for a non-finite loss)
  double median = 0;  // of the comparison window
  double z = 0;       // robust z (inf when the window's MAD is 0)
};

struct Event {
  int64_t step = 0;                   // first detection
  int64_t last_step = 0;              // last detection
  std::vector<Detection> detections;  // by step, then rank
  bool has(const std::string& kind) const;
  // The first step with a loss/non-finite detection (else a grad-norm one, else `step`): the
  // step whose loss went wrong, which causes are looked for just before.
  int64_t loss_step() const;
  std::string kinds() const;  // "loss spike + step-time spike", for humans
};

std::vector<Detection> detect(const RunRecords& run, const SpikeThresholds& t = {});
std::vector<Event> merge(std::vector<Detection> detections, int64_t gap);
inline std::vector<Event> detect_events(const RunRecords& run, const SpikeThresholds& t = {}) {
  return merge(detect(run, t), t.merge_gap);
}

}  // namespace lockstep::diagnose
