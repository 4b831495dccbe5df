#include "harness/compare/execute.h"

#include <algorithm>
#include <filesystem>

#include "harness/external/external_config.h"
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

std::vector<runs::RunOutcome> execute_alignment(const ComparisonPlan& plan, const Log& log,
                                                size_t from) {
  const std::vector<ArmRun> runs(plan.alignment.begin() + static_cast<long>(std::min(from, plan.alignment.size())),
                                 plan.alignment.end());
  if (runs.empty()) return {};
  return run_untimed(plan, runs,
                     from == 0 ? "full-length runs for the loss check"
                               : "more full-length runs for the loss check",
                     log);
}

std::pair<TrainerProtocol, TrainerProtocol> announced(const ComparisonPlan& plan,
                                                      const std::vector<runs::RunOutcome>& full) {
  auto of = [&](size_t i) {
    const auto& a = plan.alignment.at(i);
    const config::Config& cfg = a.arm == Arm::Baseline ? plan.baseline_config : plan.variant_config;
    if (i < full.size() && full[i].has_summary) return TrainerProtocol::from_env(full[i].summary.env);
    return external::is_external(cfg) ? TrainerProtocol{} : TrainerProtocol::own();
  };
  if (plan.mode == Mode::Golden) return {of(0), of(0)};
  return {of(0), of(1)};
}

void drop_probe_checkpoints(const ComparisonPlan& plan) {
  // Weights and optimizer state at up to 5 steps (gigabytes for a large preset): they served only
  // the probe; the sketches stay in arms/probe/.
  if (plan.probe_every <= 0 || plan.alignment.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(runs::RunFolder(plan.alignment.front().job.dir).checkpoints(), ec);
}

std::vector<runs::RunOutcome> execute_probes(const ComparisonPlan& plan, const Log& log) {
  auto out = run_untimed(plan, plan.probes, "function probes at the baseline's checkpoints", log);
  drop_probe_checkpoints(plan);
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
        for (size_t r = 0; r < plan.turn_cpus.size(); ++r) {  // " on CPU 0" | " on CPUs 0 | 1"
          on += r ? " | " : plan.turn_cpus.size() == 1 ? " on CPU " : " on CPUs ";
          for (size_t k = 0; k < plan.turn_cpus[r].size(); ++k)
            on += (k ? "," : "") + std::to_string(plan.turn_cpus[r][k]);
        }
        if (plan.turn_cpus.size() > 1) on += " (arm by arm, all ranks together)";
        log("timing repeats " + std::to_string(i + 1) + "+" + std::to_string(i + 2) + "/" +
            std::to_string(until) + ": " + to_string(t.arm) + " and " + to_string(plan.timing[i + 1].arm) +
            " taking turns step by step" + on);
      }
      auto [first, second] =
          runs::run_children_in_turns(t.job, plan.timing[i + 1].job, plan.turn_cpus, plan.turn_ranks);
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
