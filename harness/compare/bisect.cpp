#include "harness/compare/bisect.h"

#include "harness/compare/comparison_stats.h"
#include "harness/compare/comparison.h"
#include "harness/util/exit_codes.h"

namespace lockstep::compare {

BisectPlan plan_bisect(const config::Config& base, const config::Config& var) {
  BisectPlan p;
  const auto changes = config::diff(base, var);
  p.knobs = classify_changes(changes).knobs;
  for (const auto& c : changes)
    for (const auto& k : p.knobs)
      if (k == c.key) p.sets.push_back(c.key + "=" + c.after);
  for (const auto& c : changes)
    if (c.knob == config::Knob::None && (c.key == "plugins.load" || c.key == "gate.alignment"))
      p.carry.push_back(c.key + "=" + c.after);
  return p;
}

BisectResult run_bisect(const BisectRequest& req) {
  BisectResult out;
  const auto plan = plan_bisect(config::Config::load(req.baseline),
                                config::Config::load(req.variant));
  const auto& sets = plan.sets;
  const auto& carry = plan.carry;
  auto trial = [&](const std::string& mode, const std::vector<std::string>& applied,
                   const std::string& dir) {
    CompareRequest cr;
    cr.baseline = {"baseline", req.baseline, {}};
    std::vector<std::string> vsets = carry;
    vsets.insert(vsets.end(), applied.begin(), applied.end());
    cr.variant = {"variant", req.baseline, vsets};
    cr.steps = req.steps;
    cr.repeats = req.repeats;
    cr.policy_file = req.policy_file;
    cr.out_dir = (std::filesystem::path(req.out_dir) / dir).string();
    cr.log = req.log;
    cr.probe = false;
    if (req.log)
      req.log(mode + ": " + (applied.empty() ? "(nothing)" : applied.back()) +
              (applied.size() > 1 ? " (+ earlier knobs)" : ""));
    auto r = run_comparison(cr);
    if (req.on_trial) req.on_trial(r, cr.out_dir);
    BisectTrial t;
    t.mode = mode;
    t.sets = applied;
    t.verdict = r.verdict;
    t.exit_code = r.exit_code;
    t.report_dir = cr.out_dir;
    for (const auto& c : r.checks) {
      if (c.passed) continue;
      if (c.kind == CheckKind::LossAlignment) t.aligned = false;
      if (c.kind == CheckKind::P99Latency) t.p99_ok = false;
      if (c.kind == CheckKind::Throughput) t.throughput_ok = false;
      if (c.kind == CheckKind::RunsCompleted) t.ran = false;
      t.detail += (t.detail.empty() ? "" : "; ") + c.name + ": " + c.detail;
    }
    return t;
  };

  for (size_t i = 0; i < sets.size(); ++i) {
    auto t = trial("alone", {sets[i]}, "alone-" + std::to_string(i + 1));
    if (!t.aligned || !t.p99_ok || !t.ran) out.culprits.push_back(plan.knobs[i]);
    if (!t.ran) out.exit_code = kExitRunFailed;
    out.trials.push_back(t);
  }
  for (size_t i = 1; i < sets.size(); ++i) {
    std::vector<std::string> applied(sets.begin(), sets.begin() + static_cast<long>(i) + 1);
    auto t = trial("cumulative", applied, "cumulative-" + std::to_string(i + 1));
    if (t.verdict != Verdict::Pass && out.first_failing_cumulative.empty())
      out.first_failing_cumulative = sets[i];
    if (!t.ran) out.exit_code = kExitRunFailed;
    out.trials.push_back(t);
  }
  // Knobs that pass alone but fail together (an interaction) fail the variant just as a single
  // culprit does: a CI gate must not exit 0 on them.
  if (out.exit_code == 0)
    out.exit_code = out.culprits.empty() && out.first_failing_cumulative.empty() ? kExitPass
                                                                                 : kExitGateFailed;
  return out;
}

}  // namespace lockstep::compare
