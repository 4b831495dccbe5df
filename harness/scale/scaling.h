// `lockstep scale`: strong and weak scaling of one config over several rank counts.
//
// [data] batch_size is the GLOBAL batch per micro-step, split evenly over the ranks.
//   strong: the global batch stays at the config's value at every N, so the per-rank micro-batch
//           (batch / N) shrinks as N grows: devices starve (warned, naming the size at each N).
//   weak:   batch_size = base * N, so every rank keeps a micro-batch of `base` sequences.
// A size N whose global batch is not divisible by N is skipped with a note, never changed.
//
// Each point is `lockstep run CONFIG --nproc N --set parallel.world_size=N [--set
// data.batch_size=B] --stop-after W --out DIR/<mode>-N/repeat-K --quiet --no-history`, with
// W = run.warmup_steps + profile.window + the timed steps. Every point runs R times; the order of
// N alternates (ascending, descending, ...) across repeats so drift spreads over all sizes, and the
// median tokens/s is kept. A strong and a weak point with the same N and global batch (N = base's
// size) are the same run: it is measured once and shared. Speed-up is relative to the smallest N
// measured in the series; efficiency = speed-up / (N / N_ref); the comm share is the summary's
// phase_share["comm"] (median over the repeats). Amdahl's P is fitted per series (amdahl.h); the
// headline fit is the strong series' (Amdahl's law is about a fixed amount of work).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/scale/amdahl.h"

namespace lockstep::scale {

// Which scaling: Strong keeps the global batch at every N, Weak scales it with N (batch_size x N).
// A series and its points are one or the other; a request or a result may ask for Both (strong,
// then weak). Text ("strong" | "weak" | "both") only at the CLI, JSON and report boundary.
enum class Mode { Strong, Weak, Both };
const char* to_string(Mode m);
// `--mode`'s word: one of to_string's, else nullopt.
std::optional<Mode> parse_mode(const std::string& word);

// A scaling point's outcome; its word (to_string) only in the reports and the JSON.
enum class PointStatus { Ok, Skipped, Failed };
const char* to_string(PointStatus s);  // "ok" | "skipped" | "failed"

struct ScalePoint {
  Mode mode = Mode::Strong;  // Strong | Weak
  int n = 0;
  int64_t global_batch = 0;   // data.batch_size of the run
  int64_t micro_batch = 0;    // per rank: global_batch / n (0 when skipped for divisibility)
  PointStatus status = PointStatus::Ok;
  std::string note;         // why skipped / the failure, one line
  std::string shared_with;  // "strong" when this weak point reuses the strong run of the same N
  std::vector<double> tokens_per_sec_repeats;
  std::vector<double> comm_share_repeats;
  std::vector<double> step_ms_p50_repeats;
  std::vector<std::string> run_dirs;
  // derived by finish_series
  double tokens_per_sec = NAN;  // median over the repeats
  double comm_share = NAN;      // median, 0..1
  double step_ms_p50 = NAN;     // median of the repeats' P50
  double speedup = NAN;         // tokens/s over the reference point's
  double efficiency = NAN;      // speedup / (n / ref_n)
  bool measured() const { return status == PointStatus::Ok && !tokens_per_sec_repeats.empty(); }
};

struct ScaleSeries {
  Mode mode = Mode::Strong;        // Strong | Weak
  std::vector<ScalePoint> points;  // in ascending n
  int ref_n = 0;  // the smallest measured n (speed-ups are relative to it); 0 if none
  AmdahlFit fit;
};

// The points of a series before anything runs: batch sizes, micro-batches, divisibility skips.
std::vector<ScalePoint> plan_series(Mode mode, const std::vector<int>& nprocs, int64_t base_batch);

// Medians, speed-ups, efficiencies and the Amdahl fit from the points' repeats.
void finish_series(ScaleSeries& s);

// The strong-scaling starvation warning naming the per-rank micro-batch at each N, or "" when
// the micro-batch does not shrink across the series' runnable points.
std::string micro_batch_warning(const ScaleSeries& s);

// Ranks per host core: true when the ranks' threads outnumber the cores (CPU runs).
bool shares_cores(long host_cores, int max_n, int64_t threads_per_rank, const std::string& device);

struct ScaleResult {
  std::string config;  // the config file, as given
  std::string name;    // run.name
  Mode mode = Mode::Both;
  std::string out_dir;
  std::vector<int> nprocs;  // ascending
  int64_t repeats = 0;
  int64_t steps_timed = 0;
  int64_t stop_after = 0;  // W: warmup + profile window + timed steps
  int64_t warmup_steps = 0, profile_window = 0;
  int64_t base_batch = 0;  // the config's data.batch_size
  int64_t threads_per_rank = 1;
  std::string device;
  long host_cores = 0;              // cores this process may run on
  double load_average = NAN;        // 1-minute load average when the series started
  bool shares_cores = false;        // ranks x threads > cores at the largest N
  std::vector<ScaleSeries> series;  // "strong" then "weak"
  std::vector<double> predict_at{8, 64};
  std::vector<std::string> warnings;  // starvation, shared cores, busy host, poor fits
  std::vector<std::string> notes;  // skipped sizes, shared runs, clamped windows, one-host caveat
  std::vector<std::string> failures;       // "strong N=2 repeat 1 (DIR): status: reason"
  std::map<std::string, std::string> env;  // from the first successful run
  double wall_seconds = 0;
  int exit_code = 0;  // 0 all runs succeeded, 3 some run failed

  const ScaleSeries* find(Mode mode) const;
  // The headline series for Amdahl: strong when present, else weak. nullptr when no series.
  const ScaleSeries* headline() const;
};

// Warnings and notes that follow from the numbers (starvation, shared cores, fits) and the exit
// code. run_scaling calls it; tests call it on synthetic results.
void finish_result(ScaleResult& r);

struct ScaleRequest {
  std::string config;
  std::vector<std::string> sets;  // section.key=value overrides applied to every point
  std::vector<int> nprocs;        // rank counts (any order; duplicates are an error)
  Mode mode = Mode::Both;
  int64_t repeats = 3;
  int64_t steps_timed = 30;
  std::string out_dir;
  std::function<void(const std::string&)> log;  // progress lines
};

// Validates the request (throws UsageError / config::ConfigError: exit 2), runs every point and
// returns the finished result. Never throws for a failed run: it is recorded in failures.
ScaleResult run_scaling(const ScaleRequest& req);

}  // namespace lockstep::scale
