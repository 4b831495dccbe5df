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

#include "harness/compare/request.h"
#include "harness/vocab/compare_result.h"

namespace lockstep::compare {

// Runs everything and returns the judged result (checks, verdict and exit code filled in).
// Throws config::ConfigError (a bad config) or UsageError (a bad golden file, a check step past
// the last step), both exit 2, before any run starts; a failed run is a result (exit 3), never
// an exception.
CompareResult run_comparison(const CompareRequest& req);

}  // namespace lockstep::compare
