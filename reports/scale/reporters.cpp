#include "reports/scale/reporters.h"

#include <stdexcept>

namespace lockstep::reports {

std::unique_ptr<ScaleReporter> make_scale_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<ScaleConsoleReporter>();
  if (format == "json") return std::make_unique<ScaleJsonReporter>();
  if (format == "markdown") return std::make_unique<ScaleMarkdownReporter>();
  if (format == "html") return std::make_unique<ScaleHtmlReporter>();
  throw std::invalid_argument("unknown scaling report format '" + format +
                              "' (known: console, json, markdown, html)");
}

std::vector<std::filesystem::path> write_scale_reports(const scale::ScaleResult& r,
                                                       const std::filesystem::path& dir) {
  ReporterList<scale::ScaleResult> reporters;
  for (const char* f : {"json", "markdown", "html"}) reporters.push_back(make_scale_reporter(f));
  return write_files(reporters, r, dir);
}

}  // namespace lockstep::reports
