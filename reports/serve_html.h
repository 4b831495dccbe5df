// A serving comparison as report.html (issue 37): one self-contained page (inline CSS and SVG, no
// scripts): the verdict and checks, the latency CDF of both arms, P99 against the offered load for
// both arms, and each arm's lane table with where its tail came from. Renderer only: the figures
// come from harness/serve.
#pragma once

#include <string>
#include <vector>

#include "harness/serve/figures.h"
#include "harness/serve/verdict.h"
#include "reports/gnuplot.h"

namespace lockstep::reports {

struct ServeHtmlArm {
  std::string label;   // "baseline" | "variant"
  std::string config;  // its config file
  std::vector<serve::Figures> figures;  // "all", then per lane
  serve::TailOrigin tail;
  std::vector<double> latencies_ms;         // every offered request, ascending; inf = not served
  std::vector<serve::LoadPoint> by_load;    // P99 by offered rate, ascending
  // serve.throughput_check = "capacity": every capacity-search probe (P99 at a steady rate),
  // ascending by rate, and the capacity (median over searches).
  std::vector<serve::LoadPoint> capacity_probes = {};
  double capacity_rps = 0;
};

struct ServeHtmlInput {
  std::vector<serve::ServeCheck> checks;
  bool passed = false;
  int windows = 0;
  double slo_ms = 0;
  ServeHtmlArm baseline, variant;
};

// The latency CDF of both arms (log x, the SLO as a vertical line): the share of offered requests
// served within x ms, so a curve that never reaches 1 holds unserved requests.
Plot serve_cdf_plot(const ServeHtmlInput& in);
// P99 against the offered rate for both arms, the SLO as a horizontal line: the capacity
// searches' probes (steady rates) when capacity was judged, else the windows' off-peak and peak.
Plot serve_load_plot(const ServeHtmlInput& in);

std::string serve_compare_html(const ServeHtmlInput& in);

}  // namespace lockstep::reports
