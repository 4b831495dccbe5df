// The history report's trend plot for one metric of one series: the values over the recorded
// runs (x: run in time order, labelled by short commit), the segment medians between change
// points, the flagged points marked (red down-triangle: regression, green up-triangle:
// improvement, purple diamond: loss drift) and the --window commits shaded. Drawn by gnuplot
// through reports/plots.h's run_gnuplot.
#pragma once

#include <string>

#include "reports/history/report.h"
#include "reports/plots.h"

namespace lockstep::history {

reports::Plot trend_plot(const Series& s, const MetricSeries& m, const std::string& id);

}  // namespace lockstep::history
