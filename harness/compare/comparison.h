// `lockstep compare`: runs the baseline and the variant, each in its own process, and measures
// them the way the method says: (1) anchor the baseline and prove equivalence under the same seed
// (full-length runs; for approximate knobs also K perturbed baseline runs, the noise envelope), then
// (2) measure speed with short timing repeats interleaved A B B A A B ... so drift cancels, and
// check that the repeats reproduce the full runs bit for bit. The gate then decides.
//
// Four stages, each a function with its own inputs and outputs:
//   plan     (plan.h)     request -> ComparisonPlan: configs, policy, knobs, the runs to make
//   execute  (execute.h)  plan -> the runs' outcomes (child `lockstep run`s)
//   analyse  (analyse.h)  plan + outcomes -> CompareResult (alignment, determinism, deltas)
//   gate     (harness/gate/gate.h)  CompareResult -> checks, verdict, exit code
// Execute and analyse go twice: the timing repeats run only when the alignment runs align. With
// [gate] repeats = "auto" the timing repeats go look by look (sequential.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "harness/config/config.h"

namespace lockstep::compare {

struct ArmSpec {
  std::string label;              // "baseline" | "variant"
  std::string config;             // config file
  std::vector<std::string> sets;  // section.key=value overrides
};

// CompareRequest::repeats for `--repeats auto` (gate.repeats = "auto").
inline constexpr int64_t kAutoRepeats = -1;

// A recorded loss curve to check the variant against, and where it came from.
struct ReferenceCurve {
  std::vector<double> curve;  // index 0 = step 1
  std::string source;         // e.g. "history run #12 (commit 3f2a1b0)"
};

struct CompareRequest {
  ArmSpec baseline, variant;
  std::string out_dir;
  int64_t steps = 0;        // overrides run.steps of both arms
  int64_t check_step = -1;  // overrides gate.check_step (-1 = keep)
  int64_t repeats = 0;      // overrides gate.repeats (0 = keep, kAutoRepeats = "auto")
  std::string policy_file;  // a TOML file whose [gate] replaces the variant's policy
  std::string golden_file;  // golden mode: baseline = these `step loss` lines, no timing
  int parallel = 0;  // untimed runs at once (0 = as many as the cores allow; on CUDA, the GPUs)
  // --against-history: the baseline's loss curve as recorded, looked up by the plan with the
  // baseline's effective config (loaded once, there); throws UsageError (exit 2) when there is
  // none. Alignment uses it instead of the fresh baseline run's curve, which still runs and is
  // timed as usual. Unset: the fresh baseline run is the reference.
  std::function<ReferenceCurve(const config::Config& baseline)> history_reference;
  std::function<void(const std::string&)> log;  // progress lines
  // Called once the plan is made (every config and input checked), before any run starts:
  // `compare --force` clears the folder's earlier comparison there, so a usage error leaves it.
  std::function<void()> before_runs;
  // The function probe where it applies (plan.cpp). `bisect` turns it off: its trials name the
  // knob that regresses, and the loss rules judge their alignment.
  bool probe = true;
};

// Runs everything and returns the judged result (checks, verdict and exit code filled in).
// Throws config::ConfigError (a bad config) or UsageError (a bad golden file, a check step past
// the last step), both exit 2, before any run starts; a failed run is a result (exit 3), never
// an exception.
CompareResult run_comparison(const CompareRequest& req);

// Reads a golden file of "step loss" lines; throws UsageError naming file and line.
std::vector<double> read_golden(const std::string& path);

}  // namespace lockstep::compare
