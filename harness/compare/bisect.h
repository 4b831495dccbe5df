// `lockstep bisect BASELINE VARIANT`: a variant that changes several knobs at once and fails is
// taken apart. Each changed knob is compared alone against the baseline, then the knobs are applied
// cumulatively in order; the knob(s) whose own trial breaks loss alignment or regresses P99 are
// named. Each trial is a full `compare` with its own folder; the caller writes its reports
// (BisectRequest::on_trial) and renders the result (reports/bisect_console.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "harness/config/config.h"

namespace lockstep::compare {

struct BisectRequest {
  std::string baseline, variant, out_dir;
  std::string
      policy_file;  // --policy FILE: the [gate] every trial applies (default: the baseline's)
  int64_t steps = 0, repeats = 0;
  std::function<void(const std::string&)> log;
  // Called with each trial's judged comparison and its folder as soon as the trial ends (the
  // CLI writes the trial's reports there, so a later failure loses none).
  std::function<void(const CompareResult&, const std::string& dir)> on_trial;
};

struct BisectTrial {
  std::string mode;               // "alone" | "cumulative"
  std::vector<std::string> sets;  // overrides applied to the baseline
  Verdict verdict = Verdict::Fail;  // Pass | Fail
  int exit_code = 0;
  bool aligned = true, p99_ok = true, throughput_ok = true, ran = true;
  std::string detail;  // the failed checks
  std::string report_dir;
};

struct BisectResult {
  std::vector<BisectTrial> trials;
  std::vector<std::string> culprits;  // knobs whose solo trial fails
  std::string first_failing_cumulative;
  int exit_code = 0;  // 0 no culprit, 1 culprit(s) named, 3 a run failed
};

// What the trials apply to the baseline: each changed knob as "key=value" (diff order, `knobs`
// names them), and what every trial carries whatever knobs it applies: the variant's plugin files
// (their kernels' names must exist) and its declared `[gate] alignment` (its own statement of
// what math it is; the bounds stay the baseline's or --policy's).
struct BisectPlan {
  std::vector<std::string> knobs, sets, carry;
};
BisectPlan plan_bisect(const config::Config& baseline, const config::Config& variant);

BisectResult run_bisect(const BisectRequest& req);

}  // namespace lockstep::compare
