// The outcome of `lockstep compare`: everything the reporters print, as plain data. Computed by
// harness/compare/analyse.h and harness/gate/gate.h; formatted only by reports/.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/vocab/compare_kinds.h"
#include "harness/vocab/conformance_result.h"
#include "harness/config/config.h"
#include "harness/vocab/gate_policy.h"
#include "harness/vocab/git_refs.h"
#include "harness/vocab/records.h"
#include "harness/vocab/trainer_protocol.h"

namespace lockstep::compare {

// One arm (baseline or variant) as measured.
struct ArmResult {
  std::string label;  // "baseline" | "variant"
  std::string name;   // run.name
  std::string config_path;
  std::vector<PluginRef> plugins;  // the plugin files its config loads, with their SHA-256
  RunStatus status = RunStatus::Ok;  // Ok or the failed run's (Nonfinite, Failed, Crashed, ...)
  std::string failure;               // one line, when status != Ok
  bool ok() const { return status == RunStatus::Ok; }
  // Stopped on its config (e.g. fp16 on a CPU): the user's input, not a crash.
  bool config_error() const { return status == RunStatus::ConfigError; }
  int64_t failed_step = 0;
  RunSummary alignment_run;                          // the full-length run at the comparison seed
  std::vector<double> loss_curve;                    // its loss per step (index 0 = step 1)
  std::vector<RunSummary> repeats;                   // the timing repeats, in run order
  std::vector<double> tokens_per_sec_repeats;        // one value per repeat
  std::vector<double> mfu_repeats;                   // empty when the peak is unknown
  std::vector<double> mfu_common_repeats;            // against the comparison's common peak
  std::vector<std::vector<double>> step_ms_repeats;  // timed step latencies per repeat
  // Aggregates over the repeats (median of per-repeat values; latency percentiles pooled).
  // NaN (written as null) until the timing repeats have run.
  double tokens_per_sec = NAN;
  double tokens_per_sec_ci_lo = NAN, tokens_per_sec_ci_hi = NAN;  // 95% bootstrap CI of that median
  std::optional<double> mfu;         // against this arm's own peak (its dtype's)
  std::optional<double> mfu_common;  // against CompareResult::common_peak (both arms the same)
  Percentiles step_ms{NAN, NAN, NAN, NAN};
  int64_t step_ms_n = 0;     // the pooled timed steps behind step_ms
  double step_ms_tail = NAN;  // the tail statistic (CompareResult::tail) over them
  int64_t peak_memory_bytes = 0;
  // Per rank, from the alignment run (harness/train/memory.h): what ZeRO shards, and the bytes one
  // rank sends through collectives per step. zero_stage and world_size from the arm's config.
  MemoryAccounting memory;
  double comm_bytes_per_step = NAN;
  int64_t zero_stage = 0, world_size = 1;
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
  double p_value = 1;           // two-sided, over the repeats: Mann-Whitney U, or for tokens/s
                                // of pairs that took turns the paired t-test of log ratios
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

// Which dtype's unit roundoff the envelope's noise is, whose dtype, and where it was declared
// (harness/compare/envelope_noise.h). `dtype` is a precision's name ("bf16"), "" with
// DtypeFrom::Gate ([gate] envelope_noise set the noise).
struct NoiseDtype {
  std::string dtype;
  Arm arm = Arm::Variant;
  DtypeFrom from = DtypeFrom::Default;
};

// The numerical-noise envelope an approximate variant is judged against (harness/compare/envelope.h).
struct Envelope {
  int64_t runs = 0;                  // K: perturbed baseline runs at the comparison seed
  std::vector<int64_t> noise_seeds;  // their faults.noise_seed
  double factor = 0;                 // c: the variant must stay within c E(step)
  double noise = 0;                  // relative weight noise per step (faults.weight_rounding_noise)
  std::string noise_source;          // "unit roundoff of bf16 (2^-8)" | "[gate] envelope_noise"
  NoiseDtype noise_dtype;            // the dtype behind that noise, and where it was declared
  int64_t window = 1;                // E's trailing window (steps)
  std::vector<double> values;        // E(step), index 0 = step 1; NaN = unknown
  double at_check = NAN;             // E(check_step)
  double bound_at_check = NAN;       // c E(check_step)
  bool inside = false;               // |delta(check_step)| <= bound_at_check
};

// The whole-curve rule: the mean |delta| over the last curve_window_pct of the steps, against the
// tolerance (exact knobs) or c x the envelope's mean over the same steps (approximate knobs).
struct CurveCheck {
  bool judged = false;  // false: reported only (the seed band, alignment "none", a workload change)
  int64_t from_step = 0, to_step = 0;
  double value = NAN;   // mean |delta| over [from_step, to_step]
  double bound = NAN;   // what it must not exceed (exact: strictly below)
  std::string bound_rule;  // "tolerance" | "factor x mean envelope" | "" (not judged)
  bool passed = true;
};

// The function probe (harness/compare/probe_check.h): the variant's forward at the baseline's
// checkpointed weights against K forwards of the baseline under rounding-sized weight noise.
struct ProbeCheck {
  bool run = false;       // false: not planned, or its runs failed (`note` says which)
  std::string note;       // why it did not run, when it did not
  std::vector<int64_t> steps;        // the baseline's checkpoints probed
  std::vector<std::string> tensors;  // each kernel call's output in forward order, then logits
  int64_t noise_runs = 0;
  double noise = 0;                  // their relative weight noise
  std::string noise_source;          // the envelope's, or "unit roundoff of fp32 (2^-24)"
  double factor = 0;                 // c ([gate] probe_factor)
  std::vector<std::vector<double>> variant, envelope, ratio;  // [step][tensor]: d, E, d / E
  double ratio_max = 0;
  int64_t at_step = 0;               // where ratio_max is
  std::string at_tensor;
  int64_t first_outside_step = 0;    // the first tensor in forward order with a ratio > c
  std::string first_outside_tensor;  // empty: none (passed)
  bool passed = true;
};

struct Alignment {
  // Exact | Approximate | Workload (a workload change: harness/compare/workload_change.h, which
  // has no alignment verdict: applicable = false) | None (declared by the variant, not judged).
  config::Knob klass = config::Knob::Exact;
  bool applicable = true;
  int64_t check_step = 0;
  double baseline_loss = 0, variant_loss = 0;
  double abs_diff = 0;
  double tolerance = 5e-4;
  std::string baseline_rounded, variant_rounded;  // both at three decimals
  bool equal_to_3dp = false;                      // abs_diff < tolerance
  double max_abs_diff = 0;                        // over the whole curve
  int64_t first_divergent_step = 0;               // first step with |delta| >= tolerance; 0 = none
  // How the verdict was reached: Tolerance (exact knobs) | Envelope (approximate knobs) |
  // SeedBand (approximate knobs where no envelope can be run: golden mode, external trainers) |
  // None (declared, not judged) | NotApplicable (a workload change).
  Rule rule = Rule::Tolerance;
  std::optional<Envelope> envelope;               // Rule::Envelope
  std::optional<SeedBand> band;                   // Rule::SeedBand
  CurveCheck curve;
  ProbeCheck probe;                               // Rule::Envelope: judged with it
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
  Check(CheckKind kind_, bool passed_, std::string detail_)
      : Check(kind_, passed_, std::move(detail_), verdict_from(passed_)) {}
  Check(CheckKind kind_, bool passed_, std::string detail_, Verdict verdict_)
      : kind(kind_),
        name(to_string(kind_)),
        passed(passed_),
        detail(std::move(detail_)),
        verdict(verdict_) {}
  CheckKind kind;
  std::string name;  // its display name: to_string(kind)
  bool passed = true;
  std::string detail;
  // Pass | Fail | Inconclusive (timing checks only: the CI straddles the bound; whether that
  // passes is [gate] on_inconclusive). The non-timing checks: from `passed`.
  Verdict verdict = Verdict::Pass;
  bool timing = false;  // a timing check (throughput, p99 latency, min speedup)
  // Timing checks: the Mann-Whitney p, Holm-adjusted over the timing checks, and the minimum
  // detectable effect (percent) at this comparison's noise. NaN for the other checks.
  double p_value = NAN, p_adjusted = NAN, mde_pct = NAN;
};

// The statistic the tail-latency check uses. A 99th percentile of n <= 100 steps interpolates
// between the two slowest, of 150 between the 3rd and 2nd slowest; from [gate] p99_min_samples pooled
// steps per arm (default 900: at least 9 steps above it) it is the P99, below that the maximum,
// and the reports say which.
struct TailStatistic {
  double q = 99;               // the percentile the check computes: 99, or 100 (the maximum)
  int64_t n_baseline = 0, n_variant = 0;  // pooled timed steps per arm
  std::string label = "P99";   // "P99" | "max of 150 steps" (| "max of 150/149 steps")
  bool is_p99() const { return q == 99; }
  // "150" when both arms pooled as many steps, else "150/149" (baseline/variant).
  std::string n_per_arm() const {
    return n_baseline == n_variant ? std::to_string(n_baseline)
                                   : std::to_string(n_baseline) + "/" + std::to_string(n_variant);
  }
};

// The smallest change each timing statistic could have shown at this comparison's noise
// (stats::min_detectable_effect at power 0.8; the noise: stats::pooled_cv_pct of the per-repeat
// values). NaN = unknown (not timed, fewer than 2 repeats, zero means).
struct Power {
  bool known = false;  // timed with >= 2 repeats per arm
  double tokens_per_sec_mde_pct = NAN, p99_mde_pct = NAN, p50_mde_pct = NAN;
  double level = NAN;  // the two-sided level the MDEs are computed at (alpha / timing checks)
  double power = 0.8;
};

// The one peak both arms' MFU is also shown against: the larger of the arms' own peaks (an arm's
// MFU against a peak below its own could exceed 100%), so the common MFU delta moves with tokens/s.
struct CommonPeak {
  double flops = NAN;  // FLOP/s; NaN when either arm's peak is unknown
  std::string arm;     // "baseline" | "variant": whose peak it is
  std::string source;  // that arm's peak_flops_source
};

// [gate] repeats = "auto" (harness/compare/sequential.h): the looks taken (the planned ones and
// their level come from the policy: gate::Policy::looks, check_level).
struct SequentialLook {
  int64_t repeats = 0;  // per arm
  double minutes = 0;   // the comparison's wall clock when this look was judged
  // Each timing check's verdict at this look, in the gate's order.
  std::vector<std::pair<CheckKind, Verdict>> verdicts;
};
// The method's name, with its reference, as report.json gives it (defined in sequential.cpp).
extern const char* const kSequentialMethod;
struct Sequential {
  bool enabled = false;
  std::vector<SequentialLook> looks;
  // "decisive" (every timing check passed or failed, or one failed) | "max_repeats" |
  // "max_minutes" | "run failed"
  std::string stopped;
};

// Golden mode: what the golden file brought (harness/compare/golden_file.h, docs/golden.md).
struct GoldenSource {
  int format = 1;                                  // 1: "step loss" lines; 2: with a header
  std::map<std::string, std::string> environment;  // the exporting environment (format 2)
  std::vector<std::string> differing;  // its keys whose values differ from the variant run's
  bool envelope = false;               // the file carries the envelope measured at export
  bool exact_by_envelope = false;      // an exact class judged by it, across environments
  std::string judged_by;               // one sentence: which rule the file allowed, and why
};

struct CompareResult {
  Verdict verdict = Verdict::Fail;         // Pass | Fail
  int exit_code = 1;                       // harness/util/exit_codes.h
  Mode mode = Mode::AB;
  std::vector<config::Change> changes;     // every changed key
  std::vector<std::string> changed_knobs;  // the keys that are optimizations / faults
  // Where the alignment class came from (golden mode: the variant's own knobs).
  std::string klass_source;
  std::vector<std::string> warnings;       // e.g. "one optimization at a time"
  gate::Policy policy;
  std::string policy_source;  // where the policy came from
  ArmResult baseline, variant;
  // How the timing repeat pairs ran (ComparisonPlan::interleave), and why Repeat where Step was
  // asked for.
  Interleave interleave = Interleave::Repeat;
  std::string interleave_note;
  // Kernel conformance (issue 35): the variant's kernels against their slots' exact math, run
  // before anything else when the variant changes an implementation; unset when it does not.
  std::optional<ConformanceReport> conformance;
  std::string conformance_failure;  // the check could not run (its child failed): one line
  // What each arm's trainer announced (Lockstep's own: protocol 2, everything).
  TrainerProtocol baseline_trainer = TrainerProtocol::own(), variant_trainer = TrainerProtocol::own();
  Alignment alignment;
  std::string loss_reference =
      "baseline run";  // or "history run #ID (commit ...)" (--against-history)
  Determinism determinism;
  struct {
    // p99_ms_pct: the tail statistic's change (tail.label says whether that is the P99).
    // mfu_pts: each arm against its own peak; mfu_common_pts: both against common_peak.
    Delta tokens_per_sec_pct, mfu_pts, mfu_common_pts, p50_ms_pct, p99_ms_pct;
    std::optional<double> memory_pct;  // peak memory change, percent
    // Memory per rank, percent change (harness/compare/memory_per_rank.h); unset when unknown.
    std::optional<double> param_bytes_per_rank_pct, grad_bytes_per_rank_pct,
        optimizer_state_bytes_per_rank_pct, comm_bytes_per_step_pct;
  } delta;
  Breakdown breakdown;
  TailStatistic tail;
  Power power;
  CommonPeak common_peak;
  std::vector<Check> checks;
  std::optional<Arm> failed_arm;  // the first arm whose run failed
  std::string failure;
  int64_t repeats = 0;           // timing repeats per arm that ran (0 when not timed)
  Sequential sequential;         // repeats = "auto" only
  bool timed = false;            // the timing repeats ran to the end: the deltas are measured
  bool too_few_repeats = false;  // timed, with too few repeats for a significance test
  double wall_seconds = 0;
  std::string out_dir;
  std::map<std::string, std::string> env;  // of the baseline's alignment run
  std::optional<GoldenSource> golden;      // golden mode only
  // `compare CONFIG --base-ref REF`: the arms are one config at two commits (baseline = base,
  // variant = head); unset for a comparison of two configs.
  std::optional<GitRefs> git_refs;
};

}  // namespace lockstep::compare
