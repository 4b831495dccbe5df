// The CI gate, the last stage of a comparison (plan -> execute -> analyse -> gate): turns the
// analysed comparison into checks, a verdict and an exit code, following the policy
// (harness/vocab/gate_policy.h, the [gate] section). Significance comes from the statistics, never the
// point estimate.
#pragma once

#include "harness/vocab/compare_result.h"

namespace lockstep::gate {

// Fills r.checks, r.verdict and r.exit_code from everything else in r.
void apply(compare::CompareResult& r);

}  // namespace lockstep::gate
