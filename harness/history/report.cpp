#include "harness/history/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

namespace lockstep::history {
namespace {

std::string generated_at_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<double> value_of(const SeriesPoint& p, const std::string& metric) {
  if (metric == "tokens_per_sec") return p.tokens_per_sec;
  if (metric == "mfu") return p.mfu;
  if (metric == "p99_ms") return p.p99_ms;
  return p.final_loss;
}

// The last n distinct commits of the series, newest last.
std::vector<std::string> last_commits(const std::vector<SeriesPoint>& points, int n) {
  std::vector<std::string> out;
  for (auto it = points.rbegin(); it != points.rend() && static_cast<int>(out.size()) < n; ++it)
    if (std::find(out.begin(), out.end(), it->git_commit) == out.end())
      out.push_back(it->git_commit);
  std::reverse(out.begin(), out.end());
  return out;
}

void judge(Series& s, const ReportOptions& opt) {
  s.window_commits = last_commits(s.points, opt.window);
  auto in_window = [&](const std::string& c) {
    return std::find(s.window_commits.begin(), s.window_commits.end(), c) != s.window_commits.end();
  };
  for (const auto& key : opt.metrics) {
    const MetricInfo& info = metric_info(key);
    MetricSeries m;
    m.metric = key;
    std::vector<std::string> commits, hashes;
    for (size_t i = 0; i < s.points.size(); ++i) {
      auto v = value_of(s.points[i], key);
      if (!v || !std::isfinite(*v)) continue;
      m.index.push_back(i);
      m.value.push_back(*v);
      commits.push_back(s.points[i].git_commit);
      hashes.push_back(s.points[i].config_hash);
    }
    if (info.speed) {
      for (const auto& c : detect_changes(m.value, commits, info.better, opt.changepoint)) {
        Flag f;
        f.workload = s.workload;
        f.kind = "speed";
        f.metric = key;
        f.index = m.index[c.index];
        f.commit = c.commit;
        f.previous_commit = c.previous_commit;
        f.before = c.before;
        f.after = c.after;
        f.size_pct = c.size_pct;
        f.ci_lo = c.ci_lo;
        f.ci_hi = c.ci_hi;
        f.p_value = c.p_value;
        f.delta = c.after - c.before;
        f.regression = c.regression;
        s.flags.push_back(f);
      }
    } else {
      for (const auto& d : detect_loss_drift(m.value, commits, hashes, opt.loss_tolerance)) {
        Flag f;
        f.workload = s.workload;
        f.kind = "loss drift";
        f.metric = key;
        f.index = m.index[d.index];
        f.commit = d.commit;
        f.previous_commit = d.previous_commit;
        f.before = d.before;
        f.after = d.after;
        f.delta = d.delta;
        f.size_pct = d.before != 0 ? 100.0 * d.delta / std::fabs(d.before) : NAN;
        f.regression = d.worse;
        if (d.same_commit) f.note = "same commit, different loss: the run is not deterministic";
        s.flags.push_back(f);
      }
    }
    s.metrics.push_back(std::move(m));
  }
  for (auto& f : s.flags) {
    f.recorded_at = s.points[f.index].recorded_at;
    f.in_window = in_window(f.commit);
    if (f.in_window && f.regression) ++s.regressions_in_window;
  }
  std::stable_sort(s.flags.begin(), s.flags.end(),
                   [](const Flag& a, const Flag& b) { return a.index < b.index; });
}

}  // namespace

const std::vector<MetricInfo>& metric_infos() {
  static const std::vector<MetricInfo> m{{"tokens_per_sec", "tokens/s", Better::Higher, true},
                                         {"mfu", "MFU", Better::Higher, true},
                                         {"p99_ms", "P99 step ms", Better::Lower, true},
                                         {"final_loss", "final loss", Better::Lower, false}};
  return m;
}

const MetricInfo& metric_info(const std::string& key) {
  for (const auto& m : metric_infos())
    if (m.key == key) return m;
  throw std::invalid_argument("unknown metric '" + key +
                              "' (known: tokens_per_sec, mfu, p99_ms, final_loss)");
}

std::string metric_label(const std::string& key, const std::string& workload) {
  if (key == "p99_ms" && workload == "serve") return "P99 request ms";
  return metric_info(key).label;
}

Report build_report(const std::vector<SeriesPoint>& points, const ReportOptions& opt,
                    const std::string& history_path) {
  Report r;
  r.history_path = history_path;
  r.generated_at = generated_at_now();
  r.options = opt;
  if (r.options.metrics.empty())
    for (const auto& m : metric_infos()) r.options.metrics.push_back(m.key);
  for (const auto& k : r.options.metrics) metric_info(k);  // validates
  if (r.options.window < 1) throw std::invalid_argument("--window must be at least 1");

  std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> where;
  for (const auto& p : points) {
    if (!opt.config.empty() && p.config_name != opt.config) continue;
    auto key = std::make_tuple(p.config_name, p.config_hash, p.host, p.device);
    auto it = where.find(key);
    if (it == where.end()) {
      it = where.emplace(key, r.series.size()).first;
      Series s;
      s.config_name = p.config_name;
      s.config_hash = p.config_hash;
      s.host = p.host;
      s.device = p.device;
      s.workload = p.workload;
      r.series.push_back(std::move(s));
    }
    r.series[it->second].points.push_back(p);
  }
  // By config name, then the series recorded most recently first (an edited config's new hash).
  std::sort(r.series.begin(), r.series.end(), [](const Series& a, const Series& b) {
    return std::make_tuple(a.config_name, b.points.back().recorded_at, a.host, a.device) <
           std::make_tuple(b.config_name, a.points.back().recorded_at, b.host, b.device);
  });
  for (auto& s : r.series) {
    judge(s, r.options);
    r.regressions_in_window += s.regressions_in_window;
  }
  r.exit_code = r.regressions_in_window > 0 ? 1 : 0;
  return r;
}

}  // namespace lockstep::history
