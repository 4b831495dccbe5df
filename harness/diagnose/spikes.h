// Events in a run's records, for `lockstep diagnose`: loss spikes, non-finite losses and step-time
// spikes. Torch-free: works on the StepRecords of metrics.jsonl (rank 0) and metrics.rank<r>.jsonl.
//
// Detection (all thresholds in SpikeThresholds, defaults below):
//   * loss spike: the rank-0 (global) loss at step k is judged against the loss's local trend, a
//     robust straight line (Theil-Sen: the median of the pairwise slopes) through the log of the
//     previous 12 finite losses, extrapolated to k. Its rise above the line, loss / trend - 1, is
//     scaled by the noise: 1.4826 x the MAD of the last 20 such prediction errors (log(loss /
//     trend) of earlier steps; the line's own residuals while fewer than 5 exist). A step is a
//     spike when it is
//       - a jump: robust z >= 9 and at least +10% above the trend (a bad batch: one step), or
//       - a lasting rise: this step and the next both robust z >= 2.5 and at least +15% above their
//         trends (a bad update: the weights went wrong, so the loss stays up).
//     The trend is what makes a spike visible while the loss still falls fast: against the
//     20-step window median of the detector before, the +35% jump at step 31 after
//     lr_spike_at = 30 had robust z 0.4 (the window's spread was the descent itself). The two
//     shapes are what separate a fault from this workload's own noise: on 20 clean seeds of
//     configs/baseline.toml single steps reach +19% above the trend (robust z up to 7), two in a
//     row never more than +14%. Judged from the 9th finite loss on (8 predecessors: enough for a
//     line and its spread); a run with fewer steps is too short to judge (loss_coverage()).
//   * non-finite loss: always an event.
//   * step-time spike, per rank, timed steps only: step_ms has a robust z >= 10 against the
//     previous 50 timed steps of that rank AND is >= 3x their median (wall-clock time on a shared
//     host is heavy-tailed; only a step that is several times slower than usual counts). A rank
//     that stalls shows up here: its own step, and the next step of the ranks that waited for it.
//   * gradient-norm spike (rank 0): grad_norm >= 10x the median of the previous 20 steps (and
//     robust z >= 10), from the 9th finite value on. Clipping can hide an exploding gradient from
//     the loss; it is still an event. (A degenerate batch early in training, when the loss is
//     still near chance and barely moves, shows here: 14-17x on the tiny preset; clean runs stay
//     under 2x.)
// Detections whose steps are at most 2 apart (over every rank) merge into one event, reported at
// its first step. Operating figures (faults found per step and run length, false flags on clean
// seeds): bench/RESULTS.md, "Loss-spike detector" (bench/spike_bench.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/vocab/records.h"

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
  size_t loss_window = 12;            // previous finite losses the local trend is fitted to
  size_t loss_min_history = 8;        // finite predecessors needed before a loss can be judged
  size_t loss_noise_window = 20;      // previous prediction errors the noise scale comes from
  size_t loss_noise_min = 5;          // fewer: the trend's own residuals give the scale
  double loss_z = 9.0;                // a jump: robust z of the rise above the trend
  double loss_min_rise = 0.10;        // and loss / trend - 1 at least this
  double loss_sustained_z = 2.5;      // a lasting rise: this step and the next, each this z
  double loss_sustained_rise = 0.15;  // and each at least this above its trend
  size_t time_window = 50;       // previous timed steps a step time is compared with
  size_t time_min_history = 10;
  double time_z = 10.0;
  double time_ratio = 3.0;  // step_ms / median at least this
  size_t grad_window = 20;
  double grad_ratio = 10.0;  // grad_norm / median at least this
  double grad_z = 10.0;
  int64_t merge_gap = 2;  // detections at most this many steps apart form one event
};

// One step that crossed a threshold.
struct Detection {
  std::string kind;  // "loss" | "nonfinite" | "step_time" | "grad_norm"
  int64_t step = 0;
  int64_t rank = 0;
  double value = 0;   // the loss / step_ms / grad_norm (NaN for a non-finite loss)
  double median = 0;  // what it was compared with: the window's median (a loss: its trend's value)
  double z = 0;       // robust z (inf when the window's MAD is 0)
};

// The local trend of a series at one point: a Theil-Sen line through (x, y), its value at `at`
// and the robust spread of the points about it.
struct Trend {
  double value = 0;  // the line at `at`
  double slope = 0;
  double scale = 0;  // 1.4826 x the median absolute residual about the line
};
// Needs at least 2 points with distinct x.
Trend robust_trend(const std::vector<double>& x, const std::vector<double>& y, double at);

// Which steps the loss detector could judge: every finite loss after the first
// loss_min_history ones. first_judged = 0 when there is none (the run is too short).
struct LossCoverage {
  int64_t steps = 0;  // the last step recorded (rank 0)
  int64_t first_judged = 0;
  size_t needed = 0;  // finite losses a run needs before one can be judged (loss_min_history + 1)
  bool none() const { return first_judged == 0; }
};
LossCoverage loss_coverage(const RunRecords& run, const SpikeThresholds& t = {});
// For a report: "" when some step could be judged; else one sentence saying the run is too short,
// e.g. "too short to judge loss spikes: 6 steps, and a step is judged against the trend of the 8
// before it (non-finite losses were still checked)".
std::string too_short_text(const RunRecords& run, const SpikeThresholds& t = {});

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
