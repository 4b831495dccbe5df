#include "reports/reporter.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "harness/util/files.h"
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
  std::vector<std::filesystem::path> paths;
  for (const auto& f : report_formats()) {
    auto reporter = make_reporter(f);
    auto path = dir / reporter->filename();
    util::write_atomic(path, reporter->render(r));
    paths.push_back(path);
  }
  return paths;
}

namespace text {

std::string fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string signed_fixed(double x, int decimals, const std::string& unit) {
  if (!std::isfinite(x)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", decimals, x);
  return buf + unit;
}

std::string percent(std::optional<double> share) {
  if (!share) return "unknown";
  return std::isfinite(*share) ? fixed(100 * *share, 1) + "%" : "n/a";
}

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

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace text
std::string text::timing_summary(const compare::CompareResult& r) {
  if (r.timed) return util::count_of(r.repeats, "repeat") + " per arm";
  if (r.mode == "golden") return "not timed (golden mode)";
  if (!r.failed_arm.empty()) return "not timed (a run failed)";
  return "not timed (the loss does not align)";
}

}  // namespace lockstep::reports
