// The HTML report's plots, drawn by gnuplot (`set terminal svg`) in a subprocess: loss curves,
// their difference, the step-latency ECDF per arm and the throughput per arm. Each returns inline
// SVG text, or an error saying why there is no plot (the page then says "plot unavailable").
#pragma once

#include <map>
#include <string>

#include "harness/compare/result.h"

namespace lockstep::reports {

struct Plot {
  std::string
      svg;  // "<svg ...>...</svg>" ready to inline (no XML prolog, ids prefixed); empty on failure
  std::string error;  // why there is no plot; empty on success
  bool ok() const { return !svg.empty(); }
};

// The <figure> for a plot on an HTML page: the caption (escaped) and the inline SVG, or
// "plot unavailable: why" when there is none.
std::string figure(const std::string& caption, const Plot& p);

// The gnuplot to run: $LOCKSTEP_GNUPLOT if set, else "gnuplot" from PATH.
std::string gnuplot_binary();

// Runs gnuplot on `body` in a fresh temp folder holding `data` (file name -> content) as the
// working directory; the terminal and output are set up before `body`. `id` prefixes every id in
// the SVG so several plots can share one page; `title` becomes its <title>. Never throws.
Plot run_gnuplot(const std::string& body, const std::map<std::string, std::string>& data,
                 const std::string& id, const std::string& title);

Plot loss_curves_plot(const compare::CompareResult& r);  // both loss curves vs step
Plot loss_difference_plot(
    const compare::CompareResult& r);                // variant - baseline, with the allowed band
Plot latency_plot(const compare::CompareResult& r);  // ECDF of pooled step_ms, P50/P99 marked
Plot throughput_plot(
    const compare::CompareResult& r);  // median tokens/s with CI, repeats as points

// A gnuplot string literal (single quotes; quotes doubled).
std::string gnuplot_quote(const std::string& s);

}  // namespace lockstep::reports
