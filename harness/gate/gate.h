// The CI gate: turns a measured comparison into checks, a verdict and an exit code, following the
// policy (harness/gate/policy.h). Significance comes from the statistics, never the point estimate.
#pragma once

#include "harness/compare/result.h"

namespace lockstep::gate {

// Fills r.checks, r.verdict and r.exit_code from everything else in r.
void apply(compare::CompareResult& r);

}  // namespace lockstep::gate
