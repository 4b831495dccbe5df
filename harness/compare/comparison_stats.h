// The statistics of a comparison, as pure functions over measured values: which knobs changed and
// how each must be judged, loss alignment (tolerance, noise envelope or seed band), determinism of repeated
// runs, and performance deltas with their CIs and p-values (bootstrap and Mann-Whitney; paired t
// for the tokens/s of pairs that took turns).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "harness/vocab/gate_policy.h"

namespace lockstep::compare {

struct KnobReport {
  std::vector<std::string> knobs;          // changed keys that matter (not bookkeeping)
  std::vector<std::string> optimizations;  // ... of which optimizations or workload changes
  std::vector<std::string> workload;       // ... of which change the computation itself
  config::Knob klass = config::Knob::Exact;  // Approximate if any approximate knob changed
  std::vector<std::string> warnings;
};
// Each change's knob class comes from the key's owner (config::KeySpec::knob_of): precision by
// device, implementations by the knob class their registry entries declare.
KnobReport classify_changes(const std::vector<config::Change>& changes);

struct BandInput {
  std::vector<int64_t> seeds;
  std::vector<double> losses;  // baseline loss at the check step per seed; [0] = comparison seed
};

// The perturbed baseline runs behind an approximate variant's noise envelope (envelope.h).
struct EnvelopeInput {
  std::vector<std::vector<double>> curves;  // their loss curves (index 0 = step 1)
  std::vector<int64_t> noise_seeds;
  double noise = 0;          // the relative weight noise they ran with
  std::string noise_source;  // where that size came from
  NoiseDtype noise_dtype;    // whose dtype, declared where
  double factor = 3;         // c
  int64_t window = 0;        // E's trailing window; 0 = envelope_window(steps)
  // E per step measured elsewhere (a golden file's, harness/compare/golden_file.h): used as it
  // is, and `curves` may be empty.
  std::vector<double> values;
};

// check_step 0 = the last step both curves have. Curves are indexed by step - 1. The rule:
// approximate with an envelope -> "envelope", approximate with a band -> "seed band", "none" ->
// shown only, otherwise "tolerance" (harness/compare/envelope.h states each). The curve rule's
// window is the last curve_window_pct of the steps.
Alignment check_alignment(const std::vector<double>& baseline, const std::vector<double>& variant,
                          int64_t check_step, double tolerance, config::Knob klass,
                          const std::optional<BandInput>& band,
                          const std::optional<EnvelopeInput>& envelope = std::nullopt,
                          double curve_window_pct = 20);

// Each repeat's curve must equal the reference's prefix bit for bit. Returns "" when all do, else
// a one-line description of the first mismatch.
std::string first_nondeterminism(const std::vector<double>& reference,
                                 const std::vector<std::vector<double>>& repeats);

// Percent change of the median tokens/s (variant vs baseline) over repeats.
Delta throughput_delta(const std::vector<double>& baseline, const std::vector<double>& variant,
                       const gate::Policy& p);
// The same from matched pairs (a repeat pair that took turns step by step: baseline[i] and
// variant[i] ran together): the paired t-test of the pairs' log ratios ln(v_i / b_i) at the
// policy's level; point 100 x (exp(mean) - 1), the CI the t interval mapped the same way.
Delta paired_throughput_delta(const std::vector<double>& baseline,
                              const std::vector<double>& variant, const gate::Policy& p);
// The pairs' log ratios ln(v_i / b_i) (as many as the shorter side has).
std::vector<double> log_ratios(const std::vector<double>& baseline,
                               const std::vector<double>& variant);
// Percent change of the q-th percentile of the pooled step latencies (repeats resampled as groups).
Delta latency_delta(const std::vector<std::vector<double>>& baseline,
                    const std::vector<std::vector<double>>& variant, double q,
                    const gate::Policy& p);
// Difference of the median MFU in percentage points.
Delta mfu_delta(const std::vector<double>& baseline, const std::vector<double>& variant,
                const gate::Policy& p);

// Which tail statistic a comparison with these pooled timed steps per arm can honestly call what:
// the P99 from min_samples steps in each arm, else the maximum ("max of 150 steps").
TailStatistic tail_statistic(int64_t n_baseline, int64_t n_variant, int64_t min_samples);

// The minimum detectable effects of tokens/s, P50 and the tail statistic (tail_q) from the arms'
// per-repeat values, at the two-sided `level` and power 0.8. Unknown (known = false) with fewer
// than 2 repeats in an arm. paired: tokens/s and P50 are judged as matched pairs (their MDE from
// the pairs' log ratios: stats::paired_min_detectable_effect); the tail check never is.
Power timing_power(const ArmResult& baseline, const ArmResult& variant, double tail_q,
                   double level, bool paired = false);

// The larger of the two arms' peaks (their alignment runs' peak_flops); NaN flops when either is
// unknown.
CommonPeak common_peak(const ArmResult& baseline, const ArmResult& variant);

// The timing checks the gate corrects together (Holm): throughput and the tail-latency check, and
// min speedup when the policy sets one. P50 is reported, not judged.
int timing_family_size(const gate::Policy& p);

// Median and its 95% bootstrap CI for one arm.
void median_with_ci(const std::vector<double>& x, const gate::Policy& p, double* median, double* lo,
                    double* hi);

// Per-arm phase and operator aggregates over the timing repeats (medians of phases, means of
// operator times) and the side-by-side breakdown with its one-line findings.
void aggregate_profile(ArmResult& arm);
Breakdown compare_breakdown(const ArmResult& baseline, const ArmResult& variant);

// Three-decimal rendering used in the reports ("1.455").
std::string round3(double x);

}  // namespace lockstep::compare
