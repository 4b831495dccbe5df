// Stage 0 of a comparison whose variant brings a kernel (issue 35): `lockstep conformance` on the
// variant's config, a child process like every run (the check needs LibTorch, compare does not),
// before any run starts. A kernel that fails it is rejected in seconds: nothing else runs.
#pragma once

#include <optional>
#include <string>

#include "harness/compare/plan.h"
#include "harness/vocab/conformance_result.h"

namespace lockstep::compare {

struct ConformanceOutcome {
  std::optional<ConformanceReport> report;
  std::string failure;  // the check itself could not run: one line
};

// Runs it into OUT/arms/conformance.json (its log beside it).
ConformanceOutcome run_conformance(const ComparisonPlan& plan, const CompareRequest& req);

}  // namespace lockstep::compare
