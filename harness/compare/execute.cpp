#include "harness/compare/execute.h"

#include <algorithm>
#include <filesystem>

#include "harness/runs/run_folder.h"

namespace lockstep::compare {

namespace {

// Untimed runs (the alignment runs, the probes): plan.parallel at a time, on the plan's GPU slots.
std::vector<runs::RunOutcome> run_untimed(const ComparisonPlan& plan, const std::vector<ArmRun>& runs,
                                          const std::string& what, const Log& log) {
  std::vector<runs::RunJob> jobs;
  for (const auto& a : runs) jobs.push_back(a.job);
  if (log)
    log(what + ": " + std::to_string(jobs.size()) + " (" + std::to_string(plan.parallel) +
        " at a time)");
  return runs::run_children(jobs, plan.parallel, plan.gpu_slots);
}

}  // namespace

std::vector<runs::RunOutcome> execute_alignment(const ComparisonPlan& plan, const Log& log) {
  return run_untimed(plan, plan.alignment, "full-length runs for the loss check", log);
}

std::vector<runs::RunOutcome> execute_probes(const ComparisonPlan& plan, const Log& log) {
  auto out = run_untimed(plan, plan.probes, "function probes at the baseline's checkpoints", log);
  // The probe's checkpoints (weights and AdamW state, 4 of them: gigabytes for a large preset)
  // served only it; the sketches stay in arms/probe/.
  if (!plan.probes.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(runs::RunFolder(plan.probes.front().job.probe_from).checkpoints(),
                                ec);
  }
  return out;
}

bool execute_timing_until(const ComparisonPlan& plan, const Log& log, size_t until,
                          std::vector<runs::RunOutcome>& out) {
  until = std::min(until, plan.timing.size());
  while (out.size() < until) {
    const size_t i = out.size();
    const auto& t = plan.timing[i];
    if (plan.steps_in_turns() && i + 1 < until) {  // the pair at once, step by step
      if (log) {
        std::string on;
        for (int c : plan.turn_cpus) on += (on.empty() ? " on CPU " : ",") + std::to_string(c);
        log("timing repeats " + std::to_string(i + 1) + "+" + std::to_string(i + 2) + "/" +
            std::to_string(until) + ": " + to_string(t.arm) + " and " + to_string(plan.timing[i + 1].arm) +
            " taking turns step by step" + on);
      }
      auto [first, second] =
          runs::run_children_in_turns(t.job, plan.timing[i + 1].job, plan.turn_cpus);
      out.push_back(std::move(first));
      out.push_back(std::move(second));
      if (!out[i].ok() || !out[i + 1].ok()) return false;
      continue;
    }
    if (log)
      log("timing repeat " + std::to_string(i + 1) + "/" + std::to_string(until) + ": " + to_string(t.arm));
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
