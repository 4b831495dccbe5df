// The history report as report.json: the report as data (non-finite numbers as null).
#include <cmath>
#include <nlohmann/json.hpp>

#include "reports/history/reporters.h"
#include "reports/history/wording.h"

namespace lockstep::reports {
namespace {

using history::Flag;
using history::SeriesPoint;
using history_text::describe;
using history_text::too_few_runs;

using ojson = nlohmann::ordered_json;

ojson number(double x) {
  return std::isfinite(x) ? ojson(x) : ojson(nullptr);
}
ojson opt(const std::optional<double>& x) {
  return x ? number(*x) : ojson(nullptr);
}

ojson point_json(const SeriesPoint& p) {
  return {{"id", p.id},
          {"recorded_at", p.recorded_at},
          {"git_commit", p.git_commit},
          {"git_branch", p.git_branch},
          {"config_hash", p.config_hash},
          {"tokens_per_sec", number(p.tokens_per_sec)},
          {"mfu", opt(p.mfu)},
          {"p99_ms", number(p.p99_ms)},
          {"final_loss", number(p.final_loss)}};
}

ojson flag_json(const Flag& f) {
  ojson j = {{"metric", f.metric},           {"index", f.index},
             {"commit", f.commit},           {"previous_commit", f.previous_commit},
             {"recorded_at", f.recorded_at}, {"before", number(f.before)},
             {"after", number(f.after)}};
  if (f.kind == "speed") {
    j["size_pct"] = number(f.size_pct);
    j["ci_pct"] = f.ci_lo && f.ci_hi ? ojson{number(*f.ci_lo), number(*f.ci_hi)} : ojson(nullptr);
    j["p_value"] = opt(f.p_value);
    j["direction"] = f.regression ? "regression" : "improvement";
  } else {
    j["delta"] = number(f.delta);
    j["direction"] = f.regression ? "worse" : "better";
    j["same_commit"] = !f.note.empty();
  }
  j["regression"] = f.regression;
  j["in_window"] = f.in_window;
  j["summary"] = describe(f);
  return j;
}

}  // namespace

std::string HistoryJsonReporter::render(const history::Report& r) const {
  const auto& o = r.options;
  ojson series = ojson::array();
  for (const auto& s : r.series) {
    ojson points = ojson::array(), changes = ojson::array(), drift = ojson::array();
    for (const auto& p : s.points) points.push_back(point_json(p));
    for (const auto& f : s.flags) (f.kind == "speed" ? changes : drift).push_back(flag_json(f));
    series.push_back({{"config_name", s.config_name},
                      {"config_hash", s.config_hash},
                      {"host", s.host},
                      {"device", s.device},
                      {"workload", s.workload},
                      {"runs", s.points.size()},
                      {"too_few_runs", too_few_runs(s, r.options)},  // "" when judged
                      {"window_commits", s.window_commits},
                      {"changes", changes},
                      {"loss_drift", drift},
                      {"regressions_in_window", s.regressions_in_window},
                      {"points", points}});
  }
  ojson j = {
      {"exit_code", r.exit_code},
      {"regressions_in_window", r.regressions_in_window},
      {"generated_at", r.generated_at},
      {"history", r.history_path},
      {"options",
       {{"config", o.config.empty() ? ojson(nullptr) : ojson(o.config)},
        {"metrics", o.metrics},
        {"window", o.window},
        {"loss_tolerance", o.loss_tolerance},
        {"changepoint",
         {{"method", "binary segmentation, L1 (median) cost on log values, permutation test"},
          {"alpha", o.changepoint.alpha},
          {"permutations", o.changepoint.permutations},
          {"min_segment", o.changepoint.min_segment},
          {"min_change_pct", o.changepoint.min_change_pct},
          {"bootstrap", o.changepoint.bootstrap},
          {"level", o.changepoint.level}}}}},
      {"series", series}};
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

}  // namespace lockstep::reports
