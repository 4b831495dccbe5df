// [gate]: the policy a comparison is judged by. A variant file may carry the policy that fits its
// purpose (a memory optimization bounds the slowdown it may cost and requires a memory saving).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/config/config.h"

namespace lockstep::gate {

// What an inconclusive timing check (its CI straddles the bound) does to the exit: [gate]
// on_inconclusive = "pass" | "fail" (to_string; from_text reads it at the config boundary).
enum class OnInconclusive { Pass, Fail };
inline const char* to_string(OnInconclusive o) {
  return o == OnInconclusive::Pass ? "pass" : "fail";
}
// Throws std::invalid_argument, one line, on a word that is neither.
OnInconclusive on_inconclusive_from_text(const std::string& word);

struct Policy {
  double tolerance = 5e-4;    // |loss_b - loss_v| at check_step: "equal to three decimals"
  int64_t check_step = 0;     // 0 = the last step
  // Approximate knobs (harness/compare/envelope.h): K perturbed baseline runs at the comparison
  // seed, the factor c on their envelope, the relative noise (0 = the unit roundoff of the
  // variant's compute dtype) and the curve rule's window (the last pct of the steps).
  int64_t envelope_runs = 3;
  double envelope_factor = 3.0;
  double envelope_noise = 0;
  double curve_window_pct = 20;
  // The function probe's factor c (harness/compare/probe_check.h): at the baseline's weights
  // every recorded tensor of the variant must stay within c x the noise probes' envelope. 3: from
  // bf16 on the calibration seeds of two workloads (docs/method.md "The function probe").
  double probe_factor = 3.0;
  // Extra seeds for the seed band, where no envelope can be run (golden mode, external trainers).
  int64_t seeds = 2;
  int64_t repeats = 5;        // timing repeats per arm (interleaved A B B A ...)
  // repeats = "auto": a group-sequential design (harness/compare/sequential.h). The timing checks
  // are judged at planned looks (every kLookEvery repeats per arm, and max_repeats) until each is
  // decisive, one fails, or the comparison has run max_minutes; every look tests at alpha / looks.
  bool auto_repeats = false;
  int64_t max_repeats = 24;
  double max_minutes = 30;
  static constexpr int64_t kLookEvery = 6;
  // Timed steps per repeat (after run.warmup_steps and the profiled window). A repeat replays the
  // first steps of the full run, so it never runs past run.steps: a 200-step config times 190
  // steps per repeat, 5 x 190 = 950 pooled per arm, enough for a P99 (p99_min_samples).
  int64_t timing_steps = 200;
  // How a timing repeat pair runs: "step" (the baseline and variant runs at the same time, taking
  // turns step by step, judged as matched pairs: harness/vocab/step_turn.h) | "repeat" (one run
  // after the other, judged as two independent samples). "step" falls back to "repeat" where an
  // arm has more than one rank or an external trainer.
  std::string interleave = "step";
  bool steps_in_turns() const { return interleave == "step"; }
  // Pooled timed steps per arm from which the tail check uses (and names) the P99: 900 leaves at
  // least 9 steps above it. Below it the tail check uses the maximum and says so ("max of 150
  // steps").
  int64_t p99_min_samples = 900;
  double alpha = 0.05;        // significance level (Mann-Whitney U, two-sided)
  int64_t bootstrap = 2000;   // bootstrap resamples for the confidence intervals
  double max_p99_regression_pct = 0;
  double max_slowdown_pct = 0;
  std::optional<double> min_speedup_pct;
  std::optional<double> min_memory_saving_pct;
  // What an inconclusive timing check (its CI straddles the bound) does to the exit. The check's
  // verdict says Inconclusive either way.
  OnInconclusive on_inconclusive = OnInconclusive::Pass;
  bool inconclusive_passes() const { return on_inconclusive == OnInconclusive::Pass; }
  // How the variant's loss must align, when the variant declares it: "exact" | "approximate" |
  // "none". Unset: from the knob classes of the changed keys (an external arm: "exact").
  std::optional<std::string> alignment;

  // The repeats per arm at which the timing checks are judged: {repeats}, or with auto_repeats
  // kLookEvery, 2 kLookEvery, ... and max_repeats (the last look).
  std::vector<int64_t> looks() const;
  // repeats = "auto": the first look's repeats go in `repeats` (the plan's warnings read it).
  void use_auto_repeats() {
    auto_repeats = true;
    repeats = kLookEvery;
  }
  // The two-sided level each timing check is tested at in one look: alpha, or with auto_repeats
  // alpha / looks (Bonferroni over the looks: the chance of any false alarm in the whole sequence
  // stays at most alpha, whenever it stops). The confidence intervals have level 1 - this.
  double check_level() const;
  // "95%" (alpha 0.05, fixed repeats), "98.75%" (4 looks): the CIs' level, as the reports print it.
  std::string ci_percent() const;

  static Policy from(const config::Config& cfg);
  std::string describe() const;  // one line per rule, for the reports
};

const config::SectionSchema& gate_schema();

// The policy a comparison applies and where it came from, as the reports print it:
// `--policy FILE` when one is given, else the variant's [gate] (which inherits the baseline's)
// "[gate] of VARIANT" when any gate key is set, else "defaults". A policy file that leaves
// `alignment` unset keeps the variant's.
struct ResolvedPolicy {
  Policy policy;
  std::string source;
};
ResolvedPolicy resolve_policy(const std::string& policy_file, const config::Config& variant,
                              const std::string& variant_path);

}  // namespace lockstep::gate
