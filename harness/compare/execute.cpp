#include "harness/compare/execute.h"

#include <algorithm>

namespace lockstep::compare {

std::vector<runs::RunOutcome> execute_alignment(const ComparisonPlan& plan, const Log& log) {
  std::vector<runs::RunJob> jobs;
  for (const auto& a : plan.alignment) jobs.push_back(a.job);
  if (log)
    log("full-length runs for the loss check: " + std::to_string(jobs.size()) + " (" +
        std::to_string(plan.parallel) + " at a time)");
  return runs::run_children(jobs, plan.parallel, plan.gpu_slots);
}

std::vector<runs::RunOutcome> execute_probes(const ComparisonPlan& plan, const Log& log) {
  std::vector<runs::RunJob> jobs;
  for (const auto& a : plan.probes) jobs.push_back(a.job);
  if (log)
    log("function probes at the baseline's checkpoints: " + std::to_string(jobs.size()) + " (" +
        std::to_string(plan.parallel) + " at a time)");
  return runs::run_children(jobs, plan.parallel, plan.gpu_slots);
}

bool execute_timing_until(const ComparisonPlan& plan, const Log& log, size_t until,
                          std::vector<runs::RunOutcome>& out) {
  until = std::min(until, plan.timing.size());
  while (out.size() < until) {
    const auto& t = plan.timing[out.size()];
    if (log)
      log("timing repeat " + std::to_string(out.size() + 1) + "/" + std::to_string(until) + ": " +
          t.arm);
    out.push_back(runs::run_child(t.job));
    if (!out.back().ok()) return false;
  }
  return true;
}

std::vector<runs::RunOutcome> execute_timing(const ComparisonPlan& plan, const Log& log) {
  std::vector<runs::RunOutcome> out;
  execute_timing_until(plan, log, plan.timing.size(), out);
  return out;
}

}  // namespace lockstep::compare
