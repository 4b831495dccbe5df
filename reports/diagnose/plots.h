// diagnosis.html's plots, drawn through reports/gnuplot.h: the loss with each event marked, and
// the step time per rank.
#pragma once

#include "harness/diagnose/report.h"
#include "reports/gnuplot.h"

namespace lockstep::reports {

Plot diagnosis_loss_plot(const diagnose::DiagnoseReport& r);
Plot diagnosis_time_plot(const diagnose::DiagnoseReport& r);

}  // namespace lockstep::reports
