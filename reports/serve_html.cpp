#include "reports/serve_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "reports/html_page.h"
#include "reports/serve_text.h"

namespace lockstep::reports {
namespace {

const char* kBaselineColor = "#1f77b4";
const char* kVariantColor = "#e8590c";

const char* kServeCss = R"css(figure{max-width:900px}
.banner code{color:#fff;background:rgba(255,255,255,.18)}
td.pass{color:var(--ok);font-weight:600}td.fail{color:var(--bad);font-weight:600}
td.inconclusive{color:var(--warn);font-weight:600}
)css";

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string ms_text(double x) {
  return std::isfinite(x) ? fmt(x < 10 ? "%.2f ms" : "%.1f ms", x) : "not served";
}

// The CDF's points: (ms, share of all offered requests served within it). At most ~1500 points:
// every k-th below the 95th percentile, every one above it (the tail is what the page is about).
std::string cdf_data(const std::vector<double>& sorted_ms, double* xmin, double* xmax) {
  const size_t n = sorted_ms.size();
  size_t finite = 0;
  while (finite < n && std::isfinite(sorted_ms[finite])) ++finite;
  if (finite == 0) return "";
  const size_t tail_from = static_cast<size_t>(0.95 * static_cast<double>(finite));
  const size_t step = std::max<size_t>(1, tail_from / 1000);
  std::string d;
  for (size_t i = 0; i < finite; ++i) {
    if (i < tail_from && i % step != 0) continue;
    const double x = std::max(sorted_ms[i], 0.01);
    *xmin = std::min(*xmin, x);
    *xmax = std::max(*xmax, x);
    d += gnuplot_number(x) + " " +
         gnuplot_number(static_cast<double>(i + 1) / static_cast<double>(n)) + "\n";
  }
  return d;
}

std::string verdict_cell(const std::string& v) {
  return "<td class=\"" + html_escape(v) + "\">" + html_escape(v) + "</td>";
}

void lane_table(std::ostringstream& o, const ServeHtmlArm& a) {
  o << "<table><tr>";
  const auto head = serve_table_header();
  for (size_t i = 0; i < head.size(); ++i) o << th(html_escape(head[i]), i > 0);
  o << "</tr>\n";
  for (const auto& row : serve_table_rows(a.figures)) {
    o << "<tr>";
    for (size_t i = 0; i < row.size(); ++i) o << td(html_escape(row[i]), i > 0);
    o << "</tr>\n";
  }
  o << "</table>\n<p>Tail: " << html_escape(a.tail.sentence) << ".</p>\n";
}

bool judged_capacity(const ServeHtmlInput& in) {
  return !in.baseline.capacity_probes.empty() || !in.variant.capacity_probes.empty();
}

}  // namespace

Plot serve_cdf_plot(const ServeHtmlInput& in) {
  std::map<std::string, std::string> data;
  double xmin = 1e300, xmax = 0;
  std::string plot;
  for (const auto* a : {&in.baseline, &in.variant}) {
    const std::string d = cdf_data(a->latencies_ms, &xmin, &xmax);
    if (d.empty()) continue;
    data[a->label + ".dat"] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + a->label +
            ".dat' using 1:2 with steps lw 2 lc rgb '" +
            (a == &in.baseline ? kBaselineColor : kVariantColor) + "' title " +
            gnuplot_quote(a->label);
  }
  if (plot.empty()) return {"", "no request was served"};
  xmax = std::max(xmax, in.slo_ms * 1.2);
  std::string s = "set logscale x 10\nset xlabel 'latency from the scheduled arrival (ms)'\n"
                  "set ylabel 'share of offered requests served'\nset yrange [0:1.02]\n"
                  "set xrange [" + gnuplot_number(xmin / 1.3) + ":" + gnuplot_number(xmax * 1.3) +
                  "]\nset key bottom right\nset grid\nset format x '%g'\n";
  if (in.slo_ms > 0)
    s += "set arrow from " + gnuplot_number(in.slo_ms) + ", graph 0 to " +
         gnuplot_number(in.slo_ms) + ", graph 1 nohead dt 2 lw 1.5 lc rgb '#c92a2a'\nset label " +
         gnuplot_quote("SLO " + fmt("%g ms", in.slo_ms)) + " at " + gnuplot_number(in.slo_ms) +
         ", graph 0.06 offset 0.5,0 font ',10' tc rgb '#c92a2a'\n";
  s += "set arrow from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb '#868e96'\n";
  return run_gnuplot(s + plot, data, "serve-cdf", "Request latency CDF, both arms");
}

Plot serve_load_plot(const ServeHtmlInput& in) {
  const bool probes = judged_capacity(in);
  std::map<std::string, std::string> data;
  std::string plot, extra;
  double ymax = in.slo_ms;
  for (const auto* a : {&in.baseline, &in.variant}) {
    const std::string color = a == &in.baseline ? kBaselineColor : kVariantColor;
    std::string d;
    for (const auto& p : probes ? a->capacity_probes : a->by_load)
      if (std::isfinite(p.p99.ms)) {
        d += gnuplot_number(p.rate_rps) + " " + gnuplot_number(p.p99.ms) + "\n";
        ymax = std::max(ymax, p.p99.ms);
      }
    if (d.empty()) continue;
    data[a->label + ".dat"] = d;
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + a->label + ".dat' using 1:2 " +
            (probes ? "with points pt 7 ps 1.0" : "with linespoints lw 2 pt 7 ps 1.2") +
            " lc rgb '" + color + "' title " + gnuplot_quote(a->label);
    if (probes && a->capacity_rps > 0)
      extra += "set arrow from " + gnuplot_number(a->capacity_rps) + ", graph 0 to " +
               gnuplot_number(a->capacity_rps) + ", graph 1 nohead dt 3 lw 1.5 lc rgb '" + color +
               "'\n";
  }
  if (plot.empty()) return {"", "no P99 was served at any offered rate"};
  ymax = std::min(ymax, 10 * std::max(in.slo_ms, 1.0));  // a runaway probe would flatten the rest
  if (in.slo_ms > 0)
    plot += ", " + gnuplot_number(in.slo_ms) + " with lines dt 2 lw 1.5 lc rgb '#c92a2a' title " +
            gnuplot_quote("SLO " + fmt("%g ms", in.slo_ms));
  const std::string s =
      std::string("set xlabel '") +
      (probes ? "steady offered rate (requests/s)" : "offered rate when the request arrived (requests/s)") +
      "'\nset ylabel 'P99 latency (ms)'\nset yrange [0:" + gnuplot_number(ymax * 1.15) +
      "]\nset offsets graph 0.08, graph 0.08, 0, 0\nset key top left\nset grid\n" + extra;
  return run_gnuplot(s + plot, data, "serve-load", "P99 latency against the offered load");
}

std::string serve_compare_html(const ServeHtmlInput& in) {
  std::ostringstream o;
  o << html_page_begin(std::string("Lockstep serving comparison: ") +
                           (in.passed ? "PASS" : "FAIL"),
                       kServeCss);
  o << "<div class=\"banner " << (in.passed ? "pass" : "fail") << "\"><h1>Serving comparison: "
    << (in.passed ? "PASS" : "FAIL") << "</h1><p>" << html_code(in.baseline.config) << " → "
    << html_code(in.variant.config) << " · " << in.windows
    << " window pairs in turns (AB, BA, …), the same arrivals in each pair · P99 red line "
    << html_escape(fmt("%g ms", in.slo_ms)) << "</p></div>\n<main>\n";

  // The timing checks' intervals share one level (1 - 2 alpha); "CI" when none has one.
  double level = 0;
  for (const auto& c : in.checks) level = c.ci_level > 0 ? c.ci_level : level;
  o << "<section><h2>Checks</h2>\n<table><tr>" << th("check") << th("verdict")
    << th("effect", true) << th(level > 0 ? serve::ci_name(level) : "CI", true) << th("p", true)
    << th("detail") << "</tr>\n";
  for (const auto& c : in.checks) {
    const std::string unit = "%";  // every timing check's effect is a change in %
    o << "<tr>" << td(html_escape(c.name)) << verdict_cell(compare::to_string(c.verdict))
      << td(html_escape(fmt("%+.2f", c.value_pct) + unit), true)
      << td(c.ci.valid()
                ? html_escape("[" + fmt("%+.2f", c.ci.lo) + ", " + fmt("%+.2f", c.ci.hi) + "]")
                : "-",
            true)
      << td(html_escape(fmt("%.3g", c.p)), true) << td(html_escape(c.detail)) << "</tr>\n";
  }
  o << "</table></section>\n";

  o << "<section><h2>Latency</h2>\n<div class=\"plots\">"
    << figure("Request latency CDF (latency from the scheduled arrival: a stall counts in full; "
              "dotted: the 99% line)",
              serve_cdf_plot(in))
    << figure(judged_capacity(in)
                  ? "P99 at steady offered rates: every capacity-search probe of both arms "
                    "(dotted: each arm's capacity, the median over searches)"
                  : "P99 by the offered rate at each request's arrival (off-peak and peak)",
              serve_load_plot(in))
    << "</div>\n<table><tr>" << th("arm") << th("offered rate", true) << th("requests", true)
    << th("P99", true) << "</tr>\n";
  for (const auto* a : {&in.baseline, &in.variant})
    for (const auto& p : judged_capacity(in) ? a->capacity_probes : a->by_load)
      o << "<tr>" << td(html_escape(a->label))
        << td(html_escape(fmt("%.1f req/s", p.rate_rps)), true)
        << td(std::to_string(p.requests), true)
        << td(html_escape(ms_text(p.p99.ms) + (p.p99.is_max ? " (max)" : "")), true) << "</tr>\n";
  o << "</table></section>\n";

  for (const auto* a : {&in.baseline, &in.variant}) {
    o << "<section><h2>" << html_escape(a->label == "baseline" ? "Baseline" : "Variant") << " "
      << html_code(a->config) << "</h2>\n";
    lane_table(o, *a);
    o << "</section>\n";
  }
  o << "</main>\n<footer>Lockstep · P99 from the nearest rank with a binomial 95% CI; "
       "\"(max)\": too few requests for that quantile, the largest is shown.</footer>\n"
    << html_page_end();
  return o.str();
}

}  // namespace lockstep::reports
