// `lockstep bisect BASELINE VARIANT`: a variant that changes several knobs at once and fails is
// taken apart. Each changed knob is compared alone against the baseline, then the knobs are applied
// cumulatively in order; the knob(s) whose own trial breaks loss alignment or regresses P99 are
// named. Each trial is a full `compare` with its own report folder.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace lockstep::compare {

struct BisectRequest {
  std::string baseline, variant, out_dir;
  std::string
      policy_file;  // --policy FILE: the [gate] every trial applies (default: the baseline's)
  int64_t steps = 0, repeats = 0;
  std::function<void(const std::string&)> log;
};

struct BisectTrial {
  std::string mode;               // "alone" | "cumulative"
  std::vector<std::string> sets;  // overrides applied to the baseline
  std::string verdict;            // "pass" | "fail"
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

BisectResult run_bisect(const BisectRequest& req);
std::string render_bisect(const BisectResult& r);

}  // namespace lockstep::compare
