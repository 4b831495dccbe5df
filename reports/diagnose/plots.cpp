#include "reports/diagnose/plots.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/util/format.h"

namespace lockstep::reports {

Plot diagnosis_loss_plot(const diagnose::DiagnoseReport& r) {
  std::string d, marks;
  bool any = false;
  for (const auto& rec : r.run.main()) {
    any = any || std::isfinite(rec.loss);
    d += std::to_string(rec.step) + " " +
         (std::isfinite(rec.loss) ? gnuplot_number(rec.loss) : "?") + "\n";
  }
  if (!any) return {"", "no finite loss values recorded"};
  // The key goes above the plot (never over the curve); labels sit beside their marker line, on its
  // left when the event is in the right 30% of the run.
  std::string s =
      "set xlabel 'step'\nset ylabel 'loss'\nset offsets 0, 0, graph 0.12, 0\nset key outside top "
      "center horizontal\n";
  const int64_t last = r.run.main().empty() ? 1 : std::max<int64_t>(1, r.run.main().back().step);
  int label = 0;
  for (const auto& dg : r.diagnoses) {
    const int64_t k = dg.event.step;
    const std::string top = dg.causes.empty() ? "?" : dg.causes.front().cause;
    s += "set arrow from " + std::to_string(k) + ", graph 0 to " + std::to_string(k) +
         ", graph 1 nohead dt 2 lw 1.5 lc rgb '#c92a2a'\n";
    ++label;
    s += "set label " + std::to_string(label) + " " +
         gnuplot_quote("step " + std::to_string(k) + ": " + top) + " at " + std::to_string(k) +
         ", graph " + util::format_number("%.2f", 0.96 - 0.07 * ((label - 1) % 4)) +
         (static_cast<double>(k) > 0.7 * static_cast<double>(last) ? " right offset -0.5,0"
                                                                   : " left offset 0.5,0") +
         " tc rgb '#c92a2a'\n";
    const StepRecord* rec = r.run.at(0, dg.event.loss_step());
    if (rec && std::isfinite(rec->loss))
      marks += std::to_string(rec->step) + " " + gnuplot_number(rec->loss) + "\n";
  }
  std::string plot =
      "plot 'loss.dat' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'loss (rank 0, global "
      "batch)'";
  std::map<std::string, std::string> data{{"loss.dat", d}};
  if (!marks.empty()) {
    data["marks.dat"] = marks;
    plot += ", 'marks.dat' using 1:2 with points pt 7 ps 1.2 lc rgb '#c92a2a' title 'event'";
  }
  return run_gnuplot(s + plot, data, "diagloss", "loss with events marked");
}

Plot diagnosis_time_plot(const diagnose::DiagnoseReport& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  const char* colors[] = {"#1f77b4", "#e8590c", "#2b8a3e", "#5f3dc4", "#868e96", "#d6336c"};
  for (size_t rank = 0; rank < r.run.ranks.size(); ++rank) {
    std::string d;
    for (const auto& rec : r.run.ranks[rank])
      if (rec.timed && std::isfinite(rec.step_ms))
        d += std::to_string(rec.step) + " " + gnuplot_number(rec.step_ms) + "\n";
    if (d.empty()) continue;
    const std::string file = "time" + std::to_string(rank) + ".dat";
    data[file] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + file +
            "' using 1:2 with lines lw 1.5 lc rgb '" + colors[rank % 6] + "' title " +
            gnuplot_quote("rank " + std::to_string(rank));
  }
  if (plot.empty()) return {"", "no timed steps recorded"};
  std::string s = "set xlabel 'step'\nset ylabel 'step time (ms)'\nset logscale y\n";
  for (const auto& dg : r.diagnoses)
    s += "set arrow from " + std::to_string(dg.event.step) + ", graph 0 to " +
         std::to_string(dg.event.step) + ", graph 1 nohead dt 2 lw 1.5 lc rgb '#c92a2a'\n";
  return run_gnuplot(s + plot, data, "diagtime", "step time per rank with events marked");
}

}  // namespace lockstep::reports
