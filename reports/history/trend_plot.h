// The history report's trend plot for one metric of one series: the values over the recorded
// runs (x: run in time order, labelled by short commit), the segment medians between change
// points, the flagged points marked (red down-triangle: regression, green up-triangle:
// improvement, purple diamond: loss drift) and the --window commits shaded. Drawn by gnuplot
// through reports/gnuplot.h's run_gnuplot.
#pragma once

#include <string>

#include "harness/history/report.h"
#include "reports/gnuplot.h"

namespace lockstep::reports {

Plot trend_plot(const history::Series& s, const history::MetricSeries& m, const std::string& id);

}  // namespace lockstep::reports
