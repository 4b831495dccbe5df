// report.html's plot of `lockstep scale`: speed-up vs N on log2-log2 axes.
#include <algorithm>
#include <cmath>
#include <set>

#include "reports/scale/reporters.h"
#include "reports/text.h"

namespace lockstep::reports {
namespace {

using text::fixed;

const char* kStrongColor = "#1f77b4";
const char* kWeakColor = "#e8590c";
const char* kFitColor = "#5f3dc4";

}  // namespace

Plot scale_plot(const scale::ScaleResult& r) {
  std::map<std::string, std::string> data;
  std::string plot;
  double ymin = 1, ymax = 1, xmin = 1e9, xmax = 1;
  for (double n : r.predict_at) xmax = std::max(xmax, n);
  auto add = [&](const std::string& item) { plot += (plot.empty() ? "plot " : ", ") + item; };
  for (const auto& s : r.series) {
    std::string d;
    for (const auto& p : s.points) {
      if (!std::isfinite(p.speedup) || p.speedup <= 0) continue;
      d += std::to_string(p.n) + " " + gnuplot_number(p.speedup) + "\n";
      ymin = std::min(ymin, p.speedup);
      ymax = std::max(ymax, p.speedup);
      xmin = std::min(xmin, static_cast<double>(p.n));
    }
    if (d.empty()) continue;
    const bool strong = s.mode == scale::Mode::Strong;
    const std::string mode = scale::to_string(s.mode);
    data[mode + ".dat"] = d;
    add("'" + mode + ".dat' using 1:2 with linespoints lw 2 pt " + (strong ? "7" : "5") +
        " ps 1.2 lc rgb '" + (strong ? kStrongColor : kWeakColor) + "'" +
        (strong ? "" : " dt (8,5)") + " title " + gnuplot_quote("measured " + mode));
  }
  if (plot.empty()) return {"", "no measured speed-up"};
  for (int n : r.nprocs) xmin = std::min(xmin, static_cast<double>(n));
  const auto* h = r.headline();
  const double ref = h && h->ref_n > 0 ? h->ref_n : xmin;
  ymax = std::max(ymax, xmax / ref);
  std::string s = "set logscale xy 2\nset xlabel 'ranks (N)'\nset ylabel 'speed-up vs N=" +
                  gnuplot_number(ref) + "'\nset key top left reverse Left samplen 2 font ',10'\n";
  s += "set xrange [" + gnuplot_number(xmin / 1.25) + ":" + gnuplot_number(xmax * 1.25) +
       "]\nset yrange [" + gnuplot_number(std::min(0.5, ymin / 1.25)) + ":" +
       gnuplot_number(ymax * 1.4) + "]\nset samples 400\nset format x '%g'\nset format y '%g'\n";
  std::set<double> tics{xmin};
  for (double t = 1; t <= xmax * 1.01; t *= 2) tics.insert(t);
  for (int n : r.nprocs) tics.insert(n);
  std::string tl;
  for (double t : tics)
    if (t >= xmin / 1.25) tl += (tl.empty() ? "" : ", ") + gnuplot_number(t);
  s += "set xtics (" + tl + ")\n";
  add("x / " + gnuplot_number(ref) +
      " with lines dt 2 lw 1.5 lc rgb '#888888' title 'ideal (linear)'");
  int curve = 0;
  for (const auto& ser : r.series) {
    const auto& f = ser.fit;
    if (!f.ok) continue;
    const std::string fn = "f" + std::to_string(++curve);
    // Amdahl relative to the series' reference: ((1-P) + P/ref) / ((1-P) + P/x).
    s += fn + "(x) = ((1 - " + gnuplot_number(f.p) + ") + " + gnuplot_number(f.p) + " / " +
         gnuplot_number(f.ref_n) + ") / ((1 - " + gnuplot_number(f.p) + ") + " +
         gnuplot_number(f.p) + " / x)\n";
    const bool main = &ser == h;
    add(fn + "(x) with lines lw " + (main ? "2" : "1.5") + " lc rgb '" +
        (main ? kFitColor : kWeakColor) + "'" + (main ? "" : " dt 3") + " title " +
        gnuplot_quote("Amdahl fit (" + std::string(scale::to_string(ser.mode)) +
                      "), P = " + fixed(f.p, 3)));
  }
  if (h && h->fit.ok) {
    std::string d;
    int label = 0;
    for (double n : r.predict_at) {
      const double sp = h->fit.predict(n);
      if (!std::isfinite(sp)) continue;
      d += gnuplot_number(n) + " " + gnuplot_number(sp) + "\n";
      s += "set label " + std::to_string(++label) + " " +
           gnuplot_quote(gnuplot_number(n) + " ranks: " + fixed(sp, 2) + "x") + " at " +
           gnuplot_number(n) + "," + gnuplot_number(sp) +
           (n >= xmax ? " right offset -1,-1.1" : " left offset 1,-1.1") + " tc rgb '" + kFitColor +
           "'\n";
    }
    if (!d.empty()) {
      data["predicted.dat"] = d;
      add("'predicted.dat' using 1:2 with points pt 9 ps 1.6 lc rgb '" + std::string(kFitColor) +
          "' title 'predicted (Amdahl)'");
    }
  }
  return run_gnuplot(s + plot, data, "scale", "speed-up vs ranks");
}

}  // namespace lockstep::reports
