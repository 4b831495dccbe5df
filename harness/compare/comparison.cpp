#include "harness/compare/comparison.h"

#include <chrono>
#include <filesystem>

#include "harness/compare/analyse.h"
#include "harness/compare/conformance_stage.h"
#include "harness/compare/execute.h"
#include "harness/compare/plan.h"
#include "harness/compare/sequential.h"
#include "harness/compare/swap_hint.h"
#include "harness/gate/gate.h"
#include "harness/runs/run_folder.h"

namespace lockstep::compare {

CompareResult run_comparison(const CompareRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  ComparisonPlan plan = plan_comparison(req);
  if (req.before_runs) req.before_runs();
  ConformanceOutcome conformance;
  if (plan.conformance) {  // a kernel that fails its exact math is rejected before any run
    conformance = run_conformance(plan, req);
    if (!conformance.failure.empty() || !conformance.report->passed()) {
      CompareResult r = result_from_plan(plan);
      r.conformance = conformance.report;
      r.conformance_failure = conformance.failure;
      r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      gate::apply(r);
      return r;
    }
  }
  auto aligned = execute_alignment(plan, req.log);
  if (plan.awaits_capabilities) {  // an external arm: its full runs said what it supports
    const auto [b, v] = announced(plan, aligned);
    const size_t done = plan.alignment.size();
    adopt_capabilities(plan, req, b, v);
    auto more = execute_alignment(plan, req.log, done);
    aligned.insert(aligned.end(), more.begin(), more.end());
  }
  CompareResult r = analyse_alignment(plan, aligned);
  r.conformance = conformance.report;
  if (!plan.probes.empty() && !r.failed_arm) {
    analyse_probe(plan, execute_probes(plan, req.log), r);
  } else {
    drop_probe_checkpoints(plan);
    analyse_probe(plan, {}, r);  // says why it did not run
  }
  if (should_time(r)) {
    if (plan.policy.auto_repeats)
      time_sequentially(plan, req.log, t0, r);  // repeats until decisive (sequential.h)
    else
      analyse_timing(plan, execute_timing(plan, req.log), r);
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Before the gate rules: a hint is part of what it reports, never an afterthought.
  if (auto hint = swapped_arms_hint(r); !hint.empty()) r.warnings.push_back(hint);
  gate::apply(r);
  return r;
}

}  // namespace lockstep::compare
