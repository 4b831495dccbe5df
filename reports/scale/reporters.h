// The reporters of `lockstep scale` (the interface: reports/reporter_for.h), one file per format:
// console (the table), json (report.json), markdown (report.md) and html (report.html:
// self-contained, inline CSS and SVG, no scripts, with a gnuplot plot of speed-up vs N: measured
// strong and weak points, the Amdahl fit curve, the ideal line and the predictions at 8 and 64
// ranks).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/scale/scaling.h"
#include "reports/gnuplot.h"
#include "reports/reporter_for.h"

namespace lockstep::reports {

using ScaleReporter = ReporterFor<scale::ScaleResult>;

class ScaleConsoleReporter : public ScaleReporter {
 public:
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const scale::ScaleResult& r) const override;
};

class ScaleJsonReporter : public ScaleReporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return "report.json"; }
  std::string render(const scale::ScaleResult& r) const override;  // scale_json(r), indented
};

class ScaleMarkdownReporter : public ScaleReporter {
 public:
  std::string format() const override { return "markdown"; }
  std::string filename() const override { return "report.md"; }
  std::string render(const scale::ScaleResult& r) const override;
};

class ScaleHtmlReporter : public ScaleReporter {
 public:
  std::string format() const override { return "html"; }
  std::string filename() const override { return "report.html"; }
  std::string render(const scale::ScaleResult& r) const override;
};

// report.json's content; non-finite numbers are null.
nlohmann::json scale_json(const scale::ScaleResult& r);

// Speed-up vs N on log2-log2 axes; "plot unavailable" reasons as in gnuplot.h.
Plot scale_plot(const scale::ScaleResult& r);

// console, json, markdown or html; throws std::invalid_argument for another.
std::unique_ptr<ScaleReporter> make_scale_reporter(const std::string& format);

// Writes report.json, report.md and report.html into dir (created if missing) atomically and
// returns their paths.
std::vector<std::filesystem::path> write_scale_reports(const scale::ScaleResult& r,
                                                       const std::filesystem::path& dir);

}  // namespace lockstep::reports
