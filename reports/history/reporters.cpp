#include "reports/history/reporters.h"

#include <stdexcept>

namespace lockstep::reports {

std::unique_ptr<HistoryReporter> make_history_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<HistoryConsoleReporter>();
  if (format == "json") return std::make_unique<HistoryJsonReporter>();
  if (format == "markdown") return std::make_unique<HistoryMarkdownReporter>();
  if (format == "html") return std::make_unique<HistoryHtmlReporter>();
  throw std::invalid_argument("unknown history report format '" + format +
                              "' (known: console, json, markdown, html)");
}

std::vector<std::filesystem::path> write_history_reports(const history::Report& r,
                                                         const std::filesystem::path& dir) {
  ReporterList<history::Report> reporters;
  for (const char* f : {"json", "markdown", "html"}) reporters.push_back(make_history_reporter(f));
  return write_files(reporters, r, dir);
}

}  // namespace lockstep::reports
