#include "reports/diagnose/reporters.h"

#include <stdexcept>

namespace lockstep::reports {

std::unique_ptr<DiagnosisReporter> make_diagnosis_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<DiagnosisConsoleReporter>();
  if (format == "json") return std::make_unique<DiagnosisJsonReporter>();
  if (format == "markdown") return std::make_unique<DiagnosisMarkdownReporter>();
  if (format == "html") return std::make_unique<DiagnosisHtmlReporter>();
  throw std::invalid_argument("unknown diagnosis report format '" + format +
                              "' (known: console, json, markdown, html)");
}

std::vector<std::filesystem::path> write_diagnosis_reports(const diagnose::DiagnoseReport& r,
                                                           const std::filesystem::path& dir) {
  ReporterList<diagnose::DiagnoseReport> reporters;
  for (const char* f : {"json", "markdown", "html"})
    reporters.push_back(make_diagnosis_reporter(f));
  return write_files(reporters, r, dir);
}

}  // namespace lockstep::reports
