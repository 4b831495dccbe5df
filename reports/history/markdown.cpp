// The history report as report.md: the verdict, then per series the flagged speed changes and
// loss drift.
#include <cstdio>
#include <sstream>

#include "harness/util/format.h"
#include "reports/history/reporters.h"
#include "reports/history/wording.h"
#include "reports/markdown_reporter.h"

namespace lockstep::reports {
namespace {

using history::Flag;
using history::metric_label;
using history::Series;
using history_text::format_pct;
using history_text::too_few_runs;
using history_text::format_value;
using history_text::short_commit;
using history_text::short_time;

std::string commit_cell(const std::string& c) {
  return markdown_code(short_commit(c));
}

}  // namespace

std::string HistoryMarkdownReporter::render(const history::Report& r) const {
  std::ostringstream o;
  const bool fail = r.exit_code != 0;
  o << "## " << (fail ? "❌" : "✅") << " Lockstep history: ";
  if (fail)
    o << r.regressions_in_window << " regression(s) in the last " << r.options.window
      << " commits\n\n";
  else
    o << "no regression in the last " << r.options.window << " commits\n\n";
  size_t runs = 0;
  for (const auto& s : r.series) runs += s.points.size();
  o << r.series.size() << " series (config × machine), "
    << util::count_of(static_cast<long long>(runs), "run") << " · generated "
    << r.generated_at;
  if (!r.history_path.empty()) o << " · " << markdown_code(r.history_path);
  o << "\n\n";
  if (r.series.empty())
    o << "No healthy runs recorded"
      << (r.options.config.empty() ? "" : " for config " + markdown_code(r.options.config))
      << ".\n";

  for (const auto& s : r.series) {
    o << "### " << markdown_code(s.config_name) << " on " << markdown_escape(s.host) << " ("
      << markdown_escape(s.device) << ")\n\nconfig hash " << markdown_code(s.config_hash) << " · "
      << util::count_of(static_cast<long long>(s.points.size()), "run") << ", commits "
      << commit_cell(s.points.front().git_commit) << " … "
      << commit_cell(s.points.back().git_commit) << " ("
      << markdown_escape(short_time(s.points.front().recorded_at)) << " … "
      << markdown_escape(short_time(s.points.back().recorded_at)) << " UTC)\n\n";
    o << markdown_row({"Metric", "Latest", "Flagged changes"}) << "|---|--:|---|\n";
    for (const auto& m : s.metrics) {
      size_t n = 0;
      for (const auto& f : s.flags) n += f.metric == m.metric;
      o << markdown_row({metric_label(m.metric, s.workload),
                         m.value.empty() ? "n/a" : format_value(m.metric, m.value.back()),
                         n ? std::to_string(n) : "none"});
    }
    bool speed = false, drift = false;
    for (const auto& f : s.flags) (f.kind == "speed" ? speed : drift) = true;
    if (speed) {
      o << "\n**Speed changes**\n\n"
        << markdown_row(
               {"", "Metric", "First commit after", "Size", "95% CI", "Before → after", "Window"})
        << "|---|---|---|--:|--:|--:|---|\n";
      for (const auto& f : s.flags) {
        if (f.kind != "speed") continue;
        o << markdown_row(
            {f.regression ? "🔻 regression" : "🟢 improvement", metric_label(f.metric, f.workload),
             commit_cell(f.commit), "**" + format_pct(f.size_pct) + "**",
             f.ci_lo && f.ci_hi ? "[" + format_pct(*f.ci_lo) + ", " + format_pct(*f.ci_hi) + "]"
                                : "-",
             format_value(f.metric, f.before) + " → " + format_value(f.metric, f.after),
             f.in_window ? "**yes**" : "no"});
      }
    }
    if (drift) {
      o << "\n**Loss drift** (final loss at the same config and seed moved: a numerics change)\n\n"
        << markdown_row(
               {"", "First commit after", "Previous commit", "Before → after", "Δ", "Window"})
        << "|---|---|---|--:|--:|---|\n";
      for (const auto& f : s.flags) {
        if (f.kind != "loss drift") continue;
        char delta[48];
        std::snprintf(delta, sizeof delta, "%+.3g", f.delta);
        o << markdown_row(
            {f.regression ? "🔻 worse" : "🟣 better",
             commit_cell(f.commit) + (f.note.empty() ? "" : " (" + markdown_escape(f.note) + ")"),
             commit_cell(f.previous_commit),
             format_value(f.metric, f.before) + " → " + format_value(f.metric, f.after), delta,
             f.in_window ? "**yes**" : "no"});
      }
    }
    const std::string few = too_few_runs(s, r.options);
    if (!speed && !drift) o << "\n" << (few.empty() ? "No change flagged." : few) << "\n";
    o << "\n";
  }
  o << "<sub>Change points: binary segmentation with a median (L1) cost and a permutation test (α "
       "= "
    << r.options.changepoint.alpha
    << "), reported when the 95% bootstrap CI excludes 0 and |size| ≥ "
    << r.options.changepoint.min_change_pct
    << "%. Loss drift: any change of the final loss at the same config hash.</sub>\n";
  return o.str();
}

}  // namespace lockstep::reports
