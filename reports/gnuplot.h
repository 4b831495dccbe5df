// Plots drawn by gnuplot (`set terminal svg`) in a subprocess, for every HTML report (the
// comparison's figures: reports/compare_plots.h; scaling, diagnosis and history draw their own).
// A plot is inline SVG text, or an error saying why there is none (the page then says "plot
// unavailable"); the page itself always renders.
#pragma once

#include <map>
#include <string>

namespace lockstep::reports {

struct Plot {
  std::string
      svg;  // "<svg ...>...</svg>" ready to inline (no XML prolog, ids prefixed); empty on failure
  std::string error;  // why there is no plot; empty on success
  bool ok() const { return !svg.empty(); }
};

// The gnuplot to run: $LOCKSTEP_GNUPLOT if set, else "gnuplot" from PATH.
std::string gnuplot_binary();

// Runs gnuplot on `body` in a fresh temp folder holding `data` (file name -> content) as the
// working directory; the terminal and output are set up before `body`. `id` prefixes every id in
// the SVG so several plots can share one page; `title` becomes its <title>. Never throws.
Plot run_gnuplot(const std::string& body, const std::map<std::string, std::string>& data,
                 const std::string& id, const std::string& title);

// A gnuplot string literal (single quotes; quotes doubled).
std::string gnuplot_quote(const std::string& s);

// A number in a gnuplot data file or script: "%.10g" (util::format_number), "?" when non-finite
// (the scripts `set datafile missing '?'`).
std::string gnuplot_number(double x);

}  // namespace lockstep::reports
