// The comparison's figures in report.html, drawn through reports/gnuplot.h: loss curves, their
// difference, the step-latency ECDF per arm and the throughput per arm.
#pragma once

#include "harness/vocab/compare_result.h"
#include "reports/gnuplot.h"

namespace lockstep::reports {

Plot loss_curves_plot(const compare::CompareResult& r);  // both loss curves vs step
Plot loss_difference_plot(
    const compare::CompareResult& r);                // variant - baseline, with the allowed band
Plot latency_plot(const compare::CompareResult& r);  // ECDF of pooled step_ms, P50/P99 marked
Plot throughput_plot(
    const compare::CompareResult& r);  // median tokens/s with CI, repeats as points

}  // namespace lockstep::reports
