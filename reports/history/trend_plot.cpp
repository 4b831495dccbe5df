#include "reports/history/trend_plot.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "harness/stats/statistics.h"
#include "harness/util/format.h"
#include "reports/history/wording.h"

namespace lockstep::reports {

Plot trend_plot(const history::Series& s, const history::MetricSeries& m, const std::string& id) {
  const std::string metric_label = history::metric_label(m.metric, s.workload);
  if (m.value.empty()) return {"", "no run recorded a value"};
  const double scale = m.metric == "mfu" ? 100.0 : 1.0;  // MFU in percent
  const std::string ylabel = m.metric == "mfu" ? "MFU (%)" : metric_label;
  std::map<std::string, std::string> data;
  std::string body =
      "set ylabel " + gnuplot_quote(ylabel) +
      "\nset key outside bottom center horizontal\nset offsets 0.5, 0.5, graph 0.12, graph 0.12\n";

  // Values and x tics (about a dozen commit labels at most).
  std::string values;
  for (size_t j = 0; j < m.index.size(); ++j)
    values +=
        gnuplot_number(double(m.index[j] + 1)) + " " + gnuplot_number(m.value[j] * scale) + "\n";
  data["values.dat"] = values;
  const size_t n = s.points.size();
  const size_t every = std::max<size_t>(1, (n + 11) / 12);
  std::string tics;
  for (size_t i = 0; i < n; i += every)
    tics += (tics.empty() ? "" : ", ") +
            gnuplot_quote(history_text::short_commit(s.points[i].git_commit)) + " " +
            gnuplot_number(double(i + 1));
  body += "set xtics (" + tics +
          ") rotate by 35 right font ',10'\nset xrange [0.5:" + gnuplot_number(double(n) + 0.5) +
          "]\n";

  // Shade the --window commits.
  size_t first_in_window = n;
  for (size_t i = 0; i < n; ++i)
    if (std::find(s.window_commits.begin(), s.window_commits.end(), s.points[i].git_commit) !=
        s.window_commits.end()) {
      first_in_window = i;
      break;
    }
  if (first_in_window < n)
    body += "set object 1 rect from " + gnuplot_number(double(first_in_window) + 0.5) +
            ", graph 0 to " + gnuplot_number(double(n) + 0.5) +
            ", graph 1 fc rgb '#fff4e6' fs solid 1.0 noborder behind\n";

  // Segment medians between this metric's change points, and the flagged points.
  std::vector<size_t> cuts{0};  // positions in m.index where a segment starts
  std::string reg, imp, drift;
  int label = 0;
  for (const auto& f : s.flags) {
    if (f.metric != m.metric) continue;
    auto at = std::find(m.index.begin(), m.index.end(), f.index);
    if (at == m.index.end()) continue;
    const size_t j = static_cast<size_t>(at - m.index.begin());
    const std::string xy =
        gnuplot_number(double(f.index + 1)) + " " + gnuplot_number(m.value[j] * scale) + "\n";
    const std::string color = f.kind == "loss drift" ? "#7048e8"
                              : f.regression         ? "#c92a2a"
                                                     : "#2b8a3e";
    if (f.kind == "loss drift") {
      drift += xy;
    } else {
      (f.regression ? reg : imp) += xy;
      cuts.push_back(j);
    }
    body += "set arrow from " + gnuplot_number(double(f.index) + 0.5) + ", graph 0 to " +
            gnuplot_number(double(f.index) + 0.5) + ", graph 1 nohead dt 2 lc rgb '" + color +
            "'\n";
    const std::string pct = f.kind == "loss drift"
                                ? "drift " + util::format_number("%+.3g", f.delta)
                                : util::format_number("%+.1f%%", f.size_pct);
    body += "set label " + std::to_string(++label) + " " + gnuplot_quote(pct) + " at " +
            gnuplot_number(double(f.index) + 0.7) + ", graph 0.95 left tc rgb '" + color +
            "' font ',11'\n";
  }
  std::string segments;
  if (cuts.size() > 1) {  // only worth drawing when there is a change
    std::sort(cuts.begin(), cuts.end());
    for (size_t c = 0; c < cuts.size(); ++c) {
      const size_t lo = cuts[c], hi = c + 1 < cuts.size() ? cuts[c + 1] : m.value.size();
      if (lo >= hi) continue;
      const double med = stats::median({m.value.begin() + static_cast<std::ptrdiff_t>(lo),
                                        m.value.begin() + static_cast<std::ptrdiff_t>(hi)});
      segments += gnuplot_number(double(m.index[lo]) + 0.5) + " " + gnuplot_number(med * scale) +
                  "\n" + gnuplot_number(double(m.index[hi - 1]) + 1.5) + " " +
                  gnuplot_number(med * scale) + "\n\n";
    }
  }

  std::string plot =
      "plot 'values.dat' using 1:2 with linespoints pt 7 ps 0.7 lw 1.5 lc rgb '#1f77b4' title " +
      gnuplot_quote(metric_label);
  auto add = [&](const std::string& file, const std::string& content, const std::string& style,
                 const std::string& title) {
    if (content.empty()) return;
    data[file] = content;
    plot += ", '" + file + "' using 1:2 " + style + " title " + gnuplot_quote(title);
  };
  add("segments.dat", segments, "with lines lw 2 dt 2 lc rgb '#495057'", "segment median");
  add("regressions.dat", reg, "with points pt 11 ps 2.2 lc rgb '#c92a2a'", "regression");
  add("improvements.dat", imp, "with points pt 9 ps 2.2 lc rgb '#2b8a3e'", "improvement");
  add("drift.dat", drift, "with points pt 13 ps 2.2 lc rgb '#7048e8'", "loss drift");
  return run_gnuplot(body + plot, data, id,
                     metric_label + " over commits: " + s.config_name + " on " + s.host);
}

}  // namespace lockstep::reports
