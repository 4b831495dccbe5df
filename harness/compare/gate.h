// The CI gate, the last stage of a comparison (plan -> execute -> analyse -> gate): turns the
// analysed comparison into checks, a verdict and an exit code, following the policy
// (harness/gate/policy.h, the [gate] section). Significance comes from the statistics, never the
// point estimate.
#pragma once

#include "harness/compare/result.h"

namespace lockstep::gate {

// Fills r.checks, r.verdict and r.exit_code from everything else in r.
void apply(compare::CompareResult& r);

// Whether a check of that name is one of apply's timing checks (throughput, p99 latency, min
// speedup): the ones Holm corrects together and repeats = "auto" waits on.
bool is_timing_check(const std::string& name);

}  // namespace lockstep::gate
