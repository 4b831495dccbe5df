// The history report as report.html: one self-contained page (inline CSS and SVG, no scripts, no
// external URLs): the verdict banner, then per series the flagged changes, loss drift and trend
// plots.
#include <cstdio>
#include <sstream>

#include "harness/util/format.h"
#include "reports/history/reporters.h"
#include "reports/history/trend_plot.h"
#include "reports/history/wording.h"
#include "reports/html_page.h"

namespace lockstep::reports {
namespace {

using history::Flag;
using history::metric_label;
using history::MetricSeries;
using history::Report;
using history::ReportOptions;
using history::Series;
using history_text::format_pct;
using history_text::too_few_runs;
using history_text::format_value;
using history_text::short_commit;
using history_text::short_time;

// The history report's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kHistoryCss = R"css(:root{--drift:#7048e8}
h2{margin-bottom:6px}
h3{font-size:14px;margin:14px 0 4px}
.pill{white-space:nowrap}
.pill.regression{background:var(--bad)}.pill.improvement{background:var(--ok)}.pill.drift{background:var(--drift)}
.window{font-weight:700;color:var(--warn)}
.legend{font-size:12.5px;color:var(--muted);margin:8px 0 0}
.legend b.r{color:var(--bad)}.legend b.i{color:var(--ok)}.legend b.d{color:var(--drift)}.legend b.w{color:var(--warn)}
)css";

std::string commit(const std::string& c) {
  return "<code title=\"" + html_escape(c) + "\">" + html_escape(short_commit(c)) + "</code>";
}

void banner(std::ostream& o, const Report& r) {
  size_t runs = 0;
  for (const auto& s : r.series) runs += s.points.size();
  const bool fail = r.exit_code != 0;
  o << "<header class=\"banner " << (fail ? "fail" : "pass") << "\"><h1>";
  if (fail)
    o << "✘ " << r.regressions_in_window << " regression"
      << (r.regressions_in_window == 1 ? "" : "s") << " in the last " << r.options.window
      << " commits";
  else
    o << "✔ No regression in the last " << r.options.window << " commits";
  o << "</h1><p>Lockstep history · " << r.series.size() << " series (config × machine) · "
    << util::count_of(static_cast<long long>(runs), "run") << " · exit " << r.exit_code << " · generated " << html_escape(r.generated_at)
    << "</p></header>\n<main>\n";
}

void speed_table(std::ostream& o, const Series& s) {
  o << "<h3>Speed changes</h3>\n<table><tr><th></th><th>Metric</th><th>First commit "
       "after</th><th>Recorded (UTC)</th>"
       "<th class=\"num\">Size</th><th class=\"num\">95% CI</th><th class=\"num\">p</th><th "
       "class=\"num\">Before → after</th>"
       "<th>Window</th></tr>\n";
  for (const auto& f : s.flags) {
    if (f.kind != "speed") continue;
    char p[32];
    std::snprintf(p, sizeof p, f.p_value && *f.p_value < 0.001 ? "&lt;0.001" : "%.3f",
                  f.p_value ? *f.p_value : 1.0);
    o << "<tr>"
      << td(std::string("<span class=\"pill ") +
            (f.regression ? "regression\">regression" : "improvement\">improvement") + "</span>")
      << td(html_escape(metric_label(f.metric, f.workload)))
      << td(commit(f.commit) + " <span class=\"muted\">after " + commit(f.previous_commit) +
            "</span>")
      << td(html_escape(short_time(f.recorded_at)))
      << td("<b>" + html_escape(format_pct(f.size_pct)) + "</b>", true)
      << td(f.ci_lo && f.ci_hi
                ? html_escape("[" + format_pct(*f.ci_lo) + ", " + format_pct(*f.ci_hi) + "]")
                : "-",
            true)
      << td(p, true)
      << td(html_escape(format_value(f.metric, f.before) + " → " + format_value(f.metric, f.after)),
            true)
      << td(f.in_window ? "<span class=\"window\">yes</span>" : "no") << "</tr>\n";
  }
  o << "</table>\n";
}

void drift_table(std::ostream& o, const Series& s) {
  o << "<h3>Loss drift <span class=\"muted\">(the final loss at the same config and seed moved: a "
       "numerics change, not noise)</span></h3>\n"
       "<table><tr><th></th><th>First commit after</th><th>Recorded (UTC)</th><th "
       "class=\"num\">Before → after</th><th class=\"num\">Δ</th>"
       "<th>Note</th><th>Window</th></tr>\n";
  for (const auto& f : s.flags) {
    if (f.kind != "loss drift") continue;
    char delta[48];
    std::snprintf(delta, sizeof delta, "%+.3g", f.delta);
    o << "<tr>"
      << td(std::string("<span class=\"pill ") +
            (f.regression ? "regression\">loss up" : "drift\">loss down") + "</span>")
      << td(commit(f.commit) + " <span class=\"muted\">after " + commit(f.previous_commit) +
            "</span>")
      << td(html_escape(short_time(f.recorded_at)))
      << td(html_escape(format_value(f.metric, f.before) + " → " + format_value(f.metric, f.after)),
            true)
      << td(delta, true) << td(html_escape(f.note))
      << td(f.in_window ? "<span class=\"window\">yes</span>" : "no") << "</tr>\n";
  }
  o << "</table>\n";
}

void series_section(std::ostream& o, const Series& s, size_t n, const ReportOptions& opt) {
  o << "<section><h2>" << html_code(s.config_name) << " on " << html_escape(s.host)
    << " <span class=\"muted\">(" << html_escape(s.device) << ")</span></h2>\n<p class=\"muted\">"
    << util::count_of(static_cast<long long>(s.points.size()), "run") << " from "
    << commit(s.points.front().git_commit) << " ("
    << html_escape(short_time(s.points.front().recorded_at)) << ") to "
    << commit(s.points.back().git_commit) << " ("
    << html_escape(short_time(s.points.back().recorded_at)) << " UTC) · config hash "
    << html_code(s.config_hash) << " · window: the last " << s.window_commits.size()
    << " commits</p>\n";
  o << "<table><tr><th>Metric</th><th class=\"num\">First</th><th "
       "class=\"num\">Latest</th><th>Flagged</th></tr>\n";
  for (const auto& m : s.metrics) {
    size_t flagged = 0;
    for (const auto& f : s.flags) flagged += f.metric == m.metric;
    o << "<tr>" << td(html_escape(metric_label(m.metric, s.workload)))
      << td(m.value.empty() ? "n/a" : html_escape(format_value(m.metric, m.value.front())), true)
      << td(m.value.empty() ? "n/a" : html_escape(format_value(m.metric, m.value.back())), true)
      << td(flagged ? std::to_string(flagged) : "<span class=\"muted\">none</span>") << "</tr>\n";
  }
  o << "</table>\n";
  bool speed = false, drift = false;
  for (const auto& f : s.flags) (f.kind == "speed" ? speed : drift) = true;
  if (speed) speed_table(o, s);
  if (drift) drift_table(o, s);
  const std::string few = too_few_runs(s, opt);
  if (!speed && !drift) o << "<p>" << (few.empty() ? "No change flagged." : html_escape(few)) << "</p>\n";
  o << "<div class=\"plots\">";
  for (const auto& m : s.metrics)
    o << figure(metric_label(m.metric, s.workload) + " by commit, oldest to newest",
                trend_plot(s, m, "s" + std::to_string(n) + "-" + m.metric));
  o << "</div>\n<p class=\"legend\">Markers: <b class=\"r\">▼ regression</b> and <b class=\"i\">▲ "
       "improvement</b> at the first run after "
       "a change, <b class=\"d\">◆ loss drift</b>; dashed grey: segment medians; <b "
       "class=\"w\">shaded</b>: the --window commits.</p>"
       "</section>\n";
}

}  // namespace

std::string HistoryHtmlReporter::render(const history::Report& r) const {
  std::ostringstream o;
  const std::string verdict =
      r.exit_code ? std::to_string(r.regressions_in_window) + " regression(s)" : "no regression";
  o << reports::html_page_begin("Lockstep history: " + verdict, kHistoryCss);
  banner(o, r);
  if (r.series.empty())
    o << "<section><p>No healthy runs recorded"
      << (r.options.config.empty() ? "" : " for config " + html_code(r.options.config))
      << ".</p></section>\n";
  for (size_t i = 0; i < r.series.size(); ++i) series_section(o, r.series[i], i, r.options);
  o << "</main>\n<footer>Change points: binary segmentation with a median (L1) cost on log values "
       "and a permutation test (α = "
    << r.options.changepoint.alpha << ", " << r.options.changepoint.permutations
    << " shuffles); reported when the " << 100 * r.options.changepoint.level
    << "% bootstrap CI excludes 0 and |size| ≥ " << r.options.changepoint.min_change_pct
    << "%. Loss drift: any change of the final loss at the same config hash"
    << (r.options.loss_tolerance > 0 ? " beyond " + std::to_string(r.options.loss_tolerance)
                                     : std::string())
    << ".";
  if (!r.history_path.empty()) o << " · " << html_escape(r.history_path);
  o << "</footer>\n" << reports::html_page_end();
  return o.str();
}

}  // namespace lockstep::reports
