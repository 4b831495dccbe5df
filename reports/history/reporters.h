// The history report's reporters (the interface: reports/reporter_for.h), one file per format:
// console (a few lines for the terminal), json (report.json), markdown (report.md) and html
// (report.html: self-contained, gnuplot trend plots).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/history/report.h"
#include "reports/reporter_for.h"

namespace lockstep::reports {

using HistoryReporter = ReporterFor<history::Report>;

class HistoryConsoleReporter : public HistoryReporter {
 public:
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const history::Report& r) const override;
};

class HistoryJsonReporter : public HistoryReporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return "report.json"; }
  std::string render(const history::Report& r) const override;  // non-finite numbers as null
};

class HistoryMarkdownReporter : public HistoryReporter {
 public:
  std::string format() const override { return "markdown"; }
  std::string filename() const override { return "report.md"; }
  std::string render(const history::Report& r) const override;
};

class HistoryHtmlReporter : public HistoryReporter {
 public:
  std::string format() const override { return "html"; }
  std::string filename() const override { return "report.html"; }
  std::string render(const history::Report& r) const override;
};

// console, json, markdown or html; throws std::invalid_argument for another.
std::unique_ptr<HistoryReporter> make_history_reporter(const std::string& format);

// Writes report.json, report.md and report.html into dir (created if missing) atomically;
// returns their paths.
std::vector<std::filesystem::path> write_history_reports(const history::Report& r,
                                                         const std::filesystem::path& dir);

}  // namespace lockstep::reports
