// The reports of `lockstep scale`: a console table, report.json, report.md and a self-contained
// report.html (inline CSS and SVG, no scripts) with a gnuplot plot of speed-up vs N: measured
// strong and weak points, the Amdahl fit curve, the ideal line and the predictions at 8 and 64
// ranks.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/scale/scaling.h"
#include "reports/plots.h"

namespace lockstep::reports {

std::string scale_console(const scale::ScaleResult& r);
nlohmann::json scale_json(const scale::ScaleResult& r);  // non-finite numbers are null
std::string scale_markdown(const scale::ScaleResult& r);
std::string scale_html(const scale::ScaleResult& r);

// Speed-up vs N on log2-log2 axes; "plot unavailable" reasons as in plots.h.
Plot scale_plot(const scale::ScaleResult& r);

// Writes report.json, report.md and report.html into dir atomically and returns their paths.
std::vector<std::filesystem::path> write_scale_reports(const scale::ScaleResult& r,
                                                       const std::filesystem::path& dir);

}  // namespace lockstep::reports
