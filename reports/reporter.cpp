#include "reports/reporter.h"

#include <cmath>
#include <stdexcept>

#include "harness/util/format.h"
#include "reports/console_reporter.h"
#include "reports/html_reporter.h"
#include "reports/json_reporter.h"
#include "reports/junit_reporter.h"
#include "reports/markdown_reporter.h"

namespace lockstep::reports {

std::unique_ptr<Reporter> make_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<ConsoleReporter>();
  if (format == "json") return std::make_unique<JsonReporter>();
  if (format == "markdown") return std::make_unique<MarkdownReporter>();
  if (format == "html") return std::make_unique<HtmlReporter>();
  if (format == "junit") return std::make_unique<JunitReporter>();
  throw std::invalid_argument("unknown report format '" + format +
                              "' (known: console, json, markdown, html, junit)");
}

const std::vector<std::string>& report_formats() {
  static const std::vector<std::string> formats{"json", "markdown", "html", "junit"};
  return formats;
}

std::vector<std::filesystem::path> write_reports(const compare::CompareResult& r,
                                                 const std::filesystem::path& dir) {
  ReporterList<compare::CompareResult> reporters;
  for (const auto& f : report_formats()) reporters.push_back(make_reporter(f));
  return write_files(reporters, r, dir);
}

namespace text {

std::string delta_value(const compare::Delta& d, const std::string& unit) {
  return d.known ? signed_fixed(d.point, 1, unit) : "unknown";
}

std::string delta_ci(const compare::Delta& d, const std::string& unit) {
  if (!d.known) return "-";
  return "[" + signed_fixed(d.ci_lo, 1, unit) + ", " + signed_fixed(d.ci_hi, 1, unit) + "]";
}

std::string p_value(const compare::Delta& d) {
  if (!d.known || !std::isfinite(d.p_value)) return "-";
  return d.p_value < 0.001 ? "<0.001" : fixed(d.p_value, 3);
}

std::string knob_name(config::Knob k) {
  switch (k) {
    case config::Knob::None: return "bookkeeping";
    case config::Knob::Workload: return "workload";
    case config::Knob::Exact: return "exact";
    case config::Knob::Approximate: return "approximate";
    case config::Knob::Fault: return "fault";
  }
  return "?";
}

std::string plugins(const std::vector<PluginRef>& p) {
  std::string out;
  for (const auto& x : p) out += (out.empty() ? "" : "; ") + x.file + " (sha256 " + x.sha256 + ")";
  return out.empty() ? "none" : out;
}

bool any_plugins(const compare::CompareResult& r) {
  return !r.baseline.plugins.empty() || !r.variant.plugins.empty();
}

}  // namespace text
std::string text::timing_summary(const compare::CompareResult& r) {
  if (r.timed) return util::count_of(r.repeats, "repeat") + " per arm";
  if (r.mode == "golden") return "not timed (golden mode)";
  if (!r.failed_arm.empty()) return "not timed (a run failed)";
  return "not timed (the loss does not align)";
}

}  // namespace lockstep::reports
