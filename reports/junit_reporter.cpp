#include "reports/junit_reporter.h"


#include <sstream>

#include "reports/git_refs_text.h"

namespace lockstep::reports {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\r': out += "&#13;"; break;
      case '\t': out += "&#9;"; break;
      default:
        if (c >= 0x20 && c != 0x7F) out += ch;  // XML 1.0 forbids the other C0 controls
    }
  }
  return out;
}

std::string JunitReporter::render(const compare::CompareResult& r) const {
  size_t failures = 0;
  for (const auto& c : r.checks) failures += c.passed ? 0 : 1;
  const std::string counts = " tests=\"" + std::to_string(r.checks.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\" skipped=\"0\" time=\"" +
                             text::fixed(r.wall_seconds, 3) + "\"";
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites name=\"lockstep\"" << counts << ">\n"
    << "  <testsuite name=\"lockstep.gate\"" << counts << ">\n"
    << "    <properties>\n";
  auto property = [&](const std::string& name, const std::string& value) {
    o << "      <property name=\"" << xml_escape(name) << "\" value=\"" << xml_escape(value)
      << "\"/>\n";
  };
  property("verdict", compare::to_string(r.verdict));
  property("exit_code", std::to_string(r.exit_code));
  property("mode", compare::to_string(r.mode));
  property("baseline", r.baseline.name + " (" + r.baseline.config_path + ")");
  property("variant", r.variant.name + " (" + r.variant.config_path + ")");
  for (const auto& c : r.changes) property("change." + c.key, c.before + " -> " + c.after);
  if (r.git_refs) {
    property("git.base", git_text::commit(r.git_refs->base));
    property("git.head", git_text::commit(r.git_refs->head));
    property("git.files_changed", std::to_string(r.git_refs->files.size()));
  }
  property("on_inconclusive", gate::to_string(r.policy.on_inconclusive));
  if (r.timed) property("tail_statistic", r.tail.label);
  if (const auto mde = text::power_summary(r); !mde.empty()) property("power", mde);
  if (text::any_plugins(r)) {
    property("plugins.baseline", text::plugins(r.baseline.plugins));
    property("plugins.variant", text::plugins(r.variant.plugins));
  }
  o << "    </properties>\n";
  for (const auto& c : r.checks) {
    o << "    <testcase classname=\"lockstep.gate\" name=\"" << xml_escape(c.name)
      << "\" time=\"0\"";
    if (c.passed) {  // an inconclusive check that passes says so in its detail
      o << ">\n      <system-out>" << xml_escape(compare::to_string(c.verdict) + (": " + c.detail))
        << "</system-out>\n    </testcase>\n";
    } else {
      o << ">\n      <failure message=\"" << xml_escape(c.detail) << "\" type=\"gate\">"
        << xml_escape(c.detail) << "</failure>\n    </testcase>\n";
    }
  }
  if (r.failed_arm)
    o << "    <system-err>" << xml_escape(compare::to_string(*r.failed_arm) + (": " + r.failure))
      << "</system-err>\n";
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

}  // namespace lockstep::reports
