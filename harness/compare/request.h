// What a comparison is asked to do: the two arms, the output folder, the flags that override the
// policy, golden mode, the history's reference curve. The first stage (plan.h) reads it; the
// stages after it keep it for the flags that are not config keys.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace lockstep::compare
