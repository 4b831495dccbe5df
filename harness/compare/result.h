// The outcome of `lockstep compare`: everything the reporters print, as plain data. Computed by
// harness/compare/analyse.h and harness/compare/gate.h; formatted only by reports/.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/gate/policy.h"
#include "harness/train/records.h"

namespace lockstep::compare {

// One arm (baseline or variant) as measured.
struct ArmResult {
  std::string label;  // "baseline" | "variant"
  std::string name;   // run.name
  std::string config_path;
  std::vector<PluginRef> plugins;  // the plugin files its config loads, with their SHA-256
  std::string status =
      "ok";             // "ok" or the failed run's status ("nonfinite", "failed", "crashed", ...)
  std::string failure;  // one line, when status != ok
  int64_t failed_step = 0;
  RunSummary alignment_run;                          // the full-length run at the comparison seed
  std::vector<double> loss_curve;                    // its loss per step (index 0 = step 1)
  std::vector<RunSummary> repeats;                   // the timing repeats, in run order
  std::vector<double> tokens_per_sec_repeats;        // one value per repeat
  std::vector<double> mfu_repeats;                   // empty when the peak is unknown
  std::vector<std::vector<double>> step_ms_repeats;  // timed step latencies per repeat
  // Aggregates over the repeats (median of per-repeat values; latency percentiles pooled).
  // NaN (written as null) until the timing repeats have run.
  double tokens_per_sec = NAN;
  double tokens_per_sec_ci_lo = NAN, tokens_per_sec_ci_hi = NAN;  // 95% bootstrap CI of that median
  std::optional<double> mfu;
  Percentiles step_ms{NAN, NAN, NAN, NAN};
  int64_t peak_memory_bytes = 0;
  std::map<std::string, double> phase_share;  // median over the timing repeats (share of the step)
  std::map<std::string, double> phase_ms;     // median over the timing repeats (ms per step)
  std::string bound;                          // "compute-bound" | "input-bound" | "comm-bound"
  std::vector<OpStat> top_ops;                // mean over the timing repeats' profiled windows
  std::string run_dir;                        // the alignment run's folder
};

// A performance delta between the arms with its uncertainty.
struct Delta {
  double point = 0;             // variant vs baseline (percent, or MFU points)
  double ci_lo = 0, ci_hi = 0;  // 95% bootstrap confidence interval
  double p_value = 1;           // Mann-Whitney U, two-sided, over the repeats
  bool significant = false;     // p < alpha and the CI excludes 0
  bool known = false;           // false until computed, and when it cannot be (not timed, no peak)
  std::string wording = "unknown";  // "faster" | "slower" | "no significant change" (higher/lower)
};

struct SeedBand {
  std::vector<int64_t> seeds;  // the baseline's seeds (comparison seed first)
  std::vector<double> losses;  // baseline loss at check_step per seed
  double half_width = 0;       // max |loss(seed k) - loss(comparison seed)|
  double lo = 0, hi = 0;       // the band around the baseline loss
  bool inside = false;         // |variant - baseline| <= half_width
};

struct Alignment {
  std::string klass = "exact";  // "exact" | "approximate"
  int64_t check_step = 0;
  double baseline_loss = 0, variant_loss = 0;
  double abs_diff = 0;
  double tolerance = 5e-4;
  std::string baseline_rounded, variant_rounded;  // both at three decimals
  bool equal_to_3dp = false;                      // abs_diff < tolerance
  double max_abs_diff = 0;                        // over the whole curve
  int64_t first_divergent_step = 0;               // first step with |delta| >= tolerance; 0 = none
  std::optional<SeedBand> band;                   // approximate knobs
  bool aligned = false;                           // the verdict for this class
  std::string explanation;
};

struct Determinism {
  bool checked = false;
  bool baseline_ok = true, variant_ok = true;
  std::string detail;
};

// Where the time went, side by side: the proof that a claimed bottleneck moved.
struct PhaseRow {
  std::string phase;
  double baseline_share = 0, variant_share = 0;  // of the step
  double baseline_ms = 0, variant_ms = 0;
};
struct OpRow {
  std::string name;
  double baseline_ms = 0, variant_ms = 0;  // self time per step
  double baseline_calls = 0, variant_calls = 0;
};
struct Breakdown {
  std::vector<PhaseRow> phases;
  std::vector<OpRow> ops;             // the union of both arms' top operators, largest change first
  std::vector<std::string> findings;  // one line each, e.g. "comm went from 31% to 12% of the step"
};

struct Check {
  std::string name;
  bool passed = true;
  std::string detail;
};

struct CompareResult {
  std::string verdict = "fail";            // "pass" | "fail"
  int exit_code = 1;                       // harness/exit_codes.h
  std::string mode = "ab";                 // "ab" | "golden"
  std::vector<config::Change> changes;     // every changed key
  std::vector<std::string> changed_knobs;  // the keys that are optimizations / faults
  std::vector<std::string> warnings;       // e.g. "one optimization at a time"
  gate::Policy policy;
  std::string policy_source;  // where the policy came from
  ArmResult baseline, variant;
  Alignment alignment;
  std::string loss_reference =
      "baseline run";  // or "history run #ID (commit ...)" (--against-history)
  Determinism determinism;
  struct {
    Delta tokens_per_sec_pct, mfu_pts, p50_ms_pct, p99_ms_pct;
    std::optional<double> memory_pct;  // peak memory change, percent
  } delta;
  Breakdown breakdown;
  std::vector<Check> checks;
  std::string failed_arm;  // "baseline" | "variant" when a run failed
  std::string failure;
  int64_t repeats = 0;           // timing repeats per arm that ran (0 when not timed)
  bool timed = false;            // the timing repeats ran to the end: the deltas are measured
  bool too_few_repeats = false;  // timed, with too few repeats for a significance test
  double wall_seconds = 0;
  std::string out_dir;
  std::map<std::string, std::string> env;  // of the baseline's alignment run
};

}  // namespace lockstep::compare
