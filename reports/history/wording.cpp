#include "reports/history/wording.h"

#include <cmath>

#include "harness/util/format.h"
#include "reports/text.h"

namespace lockstep::reports::history_text {

std::string short_commit(const std::string& commit) {
  return commit.substr(0, 7);
}

std::string format_value(const std::string& metric, double v) {
  if (!std::isfinite(v)) return "n/a";
  if (metric == "tokens_per_sec") return util::format_number("%.0f", v);
  if (metric == "mfu") return util::format_number("%.2f%%", 100 * v);
  if (metric == "p99_ms") return util::format_number("%.2f ms", v);
  return util::format_number("%.6f", v);
}

std::string format_pct(double pct) {
  return text::signed_fixed(pct, 1, "%");
}

std::string short_time(const std::string& recorded_at) {
  if (recorded_at.size() < 16 || recorded_at[10] != 'T') return recorded_at;
  return recorded_at.substr(0, 10) + " " + recorded_at.substr(11, 5);
}

std::string describe(const history::Flag& f) {
  const std::string label = history::metric_label(f.metric, f.workload);
  std::string s;
  if (f.kind == "speed") {
    s = label + " " + format_pct(f.size_pct);
    if (f.ci_lo && f.ci_hi) s += " [" + format_pct(*f.ci_lo) + ", " + format_pct(*f.ci_hi) + "]";
    s += " (" + format_value(f.metric, f.before) + " -> " + format_value(f.metric, f.after) +
         "), " + (f.regression ? "regression" : "improvement");
  } else {
    s = "loss drift: final loss " + format_value(f.metric, f.before) + " -> " +
        format_value(f.metric, f.after) + " (" + util::format_number("%+.3g", f.delta) +
        (f.regression ? ", worse)" : ", better)");
  }
  s += " first at " + short_commit(f.commit) + " (after " + short_commit(f.previous_commit) + ")";
  if (!f.note.empty()) s += "; " + f.note;
  return s;
}

std::string too_few_runs(const history::Series& s, const history::ReportOptions& o) {
  const size_t n = s.points.size(), speed = 2 * o.changepoint.min_segment;
  if (n >= speed) return "";
  return "too few runs: " + util::count_of(static_cast<long long>(n), "run") +
         " recorded; a speed change needs " + std::to_string(o.changepoint.min_segment) +
         " on each side (" + std::to_string(speed) + " runs), a loss drift 2";
}

}  // namespace lockstep::reports::history_text
