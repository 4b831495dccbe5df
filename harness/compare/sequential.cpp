#include "harness/compare/sequential.h"

#include <algorithm>
#include <cstdio>

#include "harness/compare/analyse.h"
#include "harness/gate/gate.h"

namespace lockstep::compare {

const char* const kSequentialMethod =
    "group-sequential, Bonferroni boundary (alpha / looks per look; repeated confidence "
    "intervals, Jennison & Turnbull 1989)";

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string stop_reason(const std::vector<Verdict>& verdicts, size_t look, size_t looks,
                        double elapsed_s, double next_s, double max_minutes) {
  const bool any_fail =
      std::find(verdicts.begin(), verdicts.end(), Verdict::Fail) != verdicts.end();
  const bool all_decided = std::all_of(verdicts.begin(), verdicts.end(), decided);
  if (any_fail || all_decided) return "decisive";
  if (look + 1 >= looks) return "max_repeats";
  if (elapsed_s + next_s > 60.0 * max_minutes) return "max_minutes";
  return "";
}

void time_sequentially(const ComparisonPlan& plan, const Log& log,
                       std::chrono::steady_clock::time_point started, CompareResult& r) {
  const std::vector<int64_t> planned = plan.policy.looks();
  Sequential seq;
  seq.enabled = true;

  std::vector<runs::RunOutcome> outs;
  const CompareResult aligned = r;
  const auto timing_started = std::chrono::steady_clock::now();
  for (size_t l = 0; l < planned.size(); ++l) {
    const size_t need = std::min(plan.timing.size(), static_cast<size_t>(2 * planned[l]));
    const bool failed = !execute_timing_until(plan, log, need, outs);
    ComparisonPlan at_look = plan;
    at_look.timing.resize(need);
    CompareResult judged = aligned;
    analyse_timing(at_look, outs, judged);
    gate::apply(judged);

    SequentialLook look;
    look.repeats = judged.repeats;
    look.minutes = seconds_since(started) / 60.0;
    std::vector<Verdict> verdicts;
    for (const auto& c : judged.checks)
      if (c.timing) {
        look.verdicts.emplace_back(c.kind, c.verdict);
        verdicts.push_back(c.verdict);
      }
    seq.looks.push_back(look);
    r = judged;
    if (failed || !judged.timed) {
      seq.stopped = "run failed";
      break;
    }
    // The next look's repeats, at the mean time a timing run has taken so far.
    const size_t next = l + 1 < planned.size()
                            ? std::min(plan.timing.size(), static_cast<size_t>(2 * planned[l + 1]))
                            : need;
    const double per_run = seconds_since(timing_started) / static_cast<double>(outs.size());
    seq.stopped = stop_reason(verdicts, l, planned.size(), seconds_since(started),
                              per_run * static_cast<double>(next - need), plan.policy.max_minutes);
    if (log) {
      std::string said;
      for (const auto& [kind, v] : look.verdicts)
        said += (said.empty() ? "" : ", ") + std::string(to_string(kind)) + " " + to_string(v);
      char head[96];
      std::snprintf(head, sizeof head, "look %zu/%zu at %lld repeats per arm (level %.3g): ", l + 1,
                    planned.size(), static_cast<long long>(look.repeats), plan.policy.check_level());
      log(head + said + (seq.stopped.empty() ? "; going on" : "; stopping: " + seq.stopped));
    }
    if (!seq.stopped.empty()) break;
  }
  r.sequential = seq;
}

}  // namespace lockstep::compare
