#include "harness/compare/execute.h"

namespace lockstep::compare {

std::vector<runs::RunOutcome> execute_alignment(const ComparisonPlan& plan, const Log& log) {
  std::vector<runs::RunJob> jobs;
  for (const auto& a : plan.alignment) jobs.push_back(a.job);
  if (log)
    log("full-length runs for the loss check: " + std::to_string(jobs.size()) + " (" +
        std::to_string(plan.parallel) + " at a time)");
  return runs::run_children(jobs, plan.parallel, plan.gpu_slots);
}

std::vector<runs::RunOutcome> execute_timing(const ComparisonPlan& plan, const Log& log) {
  std::vector<runs::RunOutcome> out;
  for (size_t i = 0; i < plan.timing.size(); ++i) {
    const auto& t = plan.timing[i];
    if (log)
      log("timing repeat " + std::to_string(i + 1) + "/" + std::to_string(plan.timing.size()) +
          ": " + t.arm);
    out.push_back(runs::run_child(t.job));
    if (!out.back().ok()) break;
  }
  return out;
}

}  // namespace lockstep::compare
