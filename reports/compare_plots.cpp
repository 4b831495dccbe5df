#include "reports/compare_plots.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace lockstep::reports {
namespace {

const char* kBaselineColor = "#1f77b4";
const char* kVariantColor = "#e8590c";

std::string arm_title(const compare::ArmResult& a, const std::string& fallback) {
  return gnuplot_quote(a.name.empty() || a.name == fallback ? fallback
                                                            : fallback + " (" + a.name + ")");
}

bool any_finite(const std::vector<double>& xs) {
  return std::any_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); });
}

}  // namespace

Plot loss_curves_plot(const compare::CompareResult& r) {
  const auto& b = r.baseline.loss_curve;
  const auto& v = r.variant.loss_curve;
  if (!any_finite(b) && !any_finite(v)) return {"", "no finite loss values recorded"};
  std::string d;
  for (size_t i = 0; i < std::max(b.size(), v.size()); ++i)
    d += std::to_string(i + 1) + " " + (i < b.size() ? gnuplot_number(b[i]) : "?") + " " +
         (i < v.size() ? gnuplot_number(v[i]) : "?") + "\n";
  std::string s = "set xlabel 'step'\nset ylabel 'loss'\n";
  if (r.alignment.check_step > 0)
    s += "set arrow from " + std::to_string(r.alignment.check_step) + ", graph 0 to " +
         std::to_string(r.alignment.check_step) + ", graph 1 nohead dt 3 lc rgb '#888888'\n";
  s += std::string("plot 'loss.dat' using 1:2 with lines lw 2 lc rgb '") + kBaselineColor +
       "' title " + arm_title(r.baseline, "baseline") +
       ", 'loss.dat' using 1:3 with lines lw 2 dt (8,5) lc rgb '" + kVariantColor + "' title " +
       arm_title(r.variant, "variant");
  return run_gnuplot(s, {{"loss.dat", d}}, "loss", "loss curves");
}

Plot loss_difference_plot(const compare::CompareResult& r) {
  const auto& b = r.baseline.loss_curve;
  const auto& v = r.variant.loss_curve;
  std::string d;
  bool any = false;
  for (size_t i = 0; i < std::min(b.size(), v.size()); ++i) {
    double diff = v[i] - b[i];
    any = any || std::isfinite(diff);
    d += std::to_string(i + 1) + " " + gnuplot_number(diff) + "\n";
  }
  if (!any) return {"", "no step with both losses finite"};
  const auto& a = r.alignment;
  const bool band = a.band.has_value();
  double allowed = band ? a.band->half_width : a.tolerance;
  std::string s =
      "set xlabel 'step'\nset ylabel 'loss(variant) - loss(baseline)'\nset format y '%g'\n"
      "set offsets 0, 0, graph 0.35, graph 0.08\n";
  std::map<std::string, std::string> data{{"diff.dat", d}};
  std::string plot;
  if (a.envelope) {
    // The envelope around the difference curve: +/- c E(step), shaded.
    std::string e;
    for (size_t i = 0; i < a.envelope->values.size(); ++i) {
      const double w = a.envelope->factor * a.envelope->values[i];
      if (std::isfinite(w))
        e += std::to_string(i + 1) + " " + gnuplot_number(-w) + " " + gnuplot_number(w) + "\n";
    }
    if (!e.empty()) {
      data["envelope.dat"] = e;
      plot = "plot 'envelope.dat' using 1:2:3 with filledcurves lc rgb '#b2f2bb' fs solid 0.5 title " +
             gnuplot_quote("+/- " + gnuplot_number(a.envelope->factor) + " x noise envelope") +
             ", ";
    }
  }
  plot += std::string(plot.empty() ? "plot " : "") +
          "'diff.dat' using 1:2 with lines lw 2 lc rgb '#5f3dc4' title 'difference'";
  if (!a.envelope && std::isfinite(allowed) && allowed > 0) {
    plot += ", " + gnuplot_number(allowed) + " with lines dt 2 lw 1.5 lc rgb '#2b8a3e' title " +
            gnuplot_quote(band ? "+/- seed band half-width" : "+/- tolerance") + ", " +
            gnuplot_number(-allowed) + " with lines dt 2 lw 1.5 lc rgb '#2b8a3e' notitle";
  }
  plot += ", 0 with lines lc rgb '#999999' notitle";
  if (a.check_step > 0)
    s += "set arrow from " + std::to_string(a.check_step) + ", graph 0 to " +
         std::to_string(a.check_step) + ", graph 1 nohead dt 3 lc rgb '#888888'\n";
  return run_gnuplot(s + plot, data, "lossdiff", "loss difference");
}

Plot latency_plot(const compare::CompareResult& r) {
  std::map<std::string, std::string> data;
  std::string s =
      "set xlabel 'step latency (ms)'\nset ylabel 'fraction of steps'\nset yrange [0:1.08]\nset "
      "key bottom right\n";
  std::string plot;
  int label = 0;
  for (const auto* arm : {&r.baseline, &r.variant}) {
    const bool is_base = arm == &r.baseline;
    std::vector<double> pooled;
    for (const auto& rep : arm->step_ms_repeats)
      for (double x : rep)
        if (std::isfinite(x)) pooled.push_back(x);
    if (pooled.empty()) continue;
    std::sort(pooled.begin(), pooled.end());
    std::string d = gnuplot_number(pooled.front()) + " 0\n";
    for (size_t i = 0; i < pooled.size(); ++i)
      d += gnuplot_number(pooled[i]) + " " + gnuplot_number(double(i + 1) / pooled.size()) + "\n";
    const std::string file = is_base ? "ecdf_b.dat" : "ecdf_v.dat";
    const std::string color = is_base ? kBaselineColor : kVariantColor;
    data[file] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + file +
            "' using 1:2 with steps lw 2 lc rgb '" + color + "'" + (is_base ? "" : " dt (8,5)") +
            " title " + arm_title(*arm, is_base ? "baseline" : "variant");
    // P50 and the tail statistic (P99, or the maximum when too few steps for a P99) as marked
    // points with their values.
    struct Mark {
      const char* name;
      double x, y;
    };
    for (const Mark& m : {Mark{"P50", arm->step_ms.p50, 0.5},
                          r.tail.is_p99() ? Mark{"P99", arm->step_ms_tail, 0.99}
                                          : Mark{"max", arm->step_ms_tail, 1.0}}) {
      const std::string q = m.name;
      const double x = m.x, y = m.y;
      if (!std::isfinite(x)) continue;
      s += "set label " + std::to_string(++label) + " " +
           gnuplot_quote(std::string(q) + " " + gnuplot_number(std::round(x * 100) / 100)) +
           " at " + gnuplot_number(x) + "," + gnuplot_number(y) +
           (is_base ? " right offset -0.8,0.6" : " left offset 0.8,-0.6") +
           " point pt 7 ps 0.9 lc rgb '" + color + "' tc rgb '" + color + "'\n";
    }
  }
  if (plot.empty()) return {"", "no timed steps recorded"};
  return run_gnuplot(s + plot, data, "latency", "step latency distribution");
}

Plot throughput_plot(const compare::CompareResult& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  int x = 0;
  for (const auto* arm : {&r.baseline, &r.variant}) {
    ++x;
    const bool is_base = arm == &r.baseline;
    const std::string color = is_base ? kBaselineColor : kVariantColor;
    const std::string tag = is_base ? "b" : "v";
    std::string reps;
    const auto& tps = arm->tokens_per_sec_repeats;
    for (size_t i = 0; i < tps.size(); ++i) {
      double jitter = tps.size() > 1 ? 0.16 * (double(i) / (tps.size() - 1) - 0.5) : 0.0;
      if (std::isfinite(tps[i]))
        reps += gnuplot_number(x + 0.22 + jitter) + " " + gnuplot_number(tps[i]) + "\n";
    }
    if (std::isfinite(arm->tokens_per_sec)) {
      data["median_" + tag + ".dat"] = std::to_string(x) + " " +
                                       gnuplot_number(arm->tokens_per_sec) + " " +
                                       gnuplot_number(arm->tokens_per_sec_ci_lo) + " " +
                                       gnuplot_number(arm->tokens_per_sec_ci_hi) + "\n";
      plot += std::string(plot.empty() ? "plot " : ", ") + "'median_" + tag +
              ".dat' using 1:2:3:4 with yerrorbars pt 7 ps 1.4 lw 2 lc rgb '" + color + "' title " +
              gnuplot_quote(std::string(is_base ? "baseline" : "variant") + " median, " +
                           r.policy.ci_percent() + " CI");
    }
    if (!reps.empty()) {
      data["reps_" + tag + ".dat"] = reps;
      plot += std::string(plot.empty() ? "plot " : ", ") + "'reps_" + tag +
              ".dat' using 1:2 with points pt 6 ps 1 lc rgb '" + color + "' title " +
              gnuplot_quote(std::string(is_base ? "baseline" : "variant") + " repeats");
    }
  }
  if (plot.empty()) return {"", "no throughput measured"};
  std::string s =
      "set ylabel 'tokens/s'\nset xrange [0.5:2.7]\nset xtics (" +
      gnuplot_quote(r.baseline.name.empty() ? "baseline" : "baseline: " + r.baseline.name) +
      " 1, " + gnuplot_quote(r.variant.name.empty() ? "variant" : "variant: " + r.variant.name) +
      " 2)\nset grid noxtics\nset offsets 0, 0, graph 0.15, graph 0.15\nset key outside bottom "
      "center horizontal\n";
  return run_gnuplot(s + plot, data, "throughput", "throughput per arm");
}

}  // namespace lockstep::reports
