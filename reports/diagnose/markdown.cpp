// The diagnosis as diagnosis.md: per event its detections and a table of ranked causes.
#include <sstream>

#include "harness/util/format.h"
#include "reports/diagnose/reporters.h"
#include "reports/diagnose/wording.h"

namespace lockstep::reports {

using namespace diagnose_text;

std::string DiagnosisMarkdownReporter::render(const diagnose::DiagnoseReport& r) const {
  std::ostringstream o;
  o << "# Loss-spike diagnosis\n\n"
    << header_line(r) << ": **" << events_text(r) << "**\n";
  if (r.diagnoses.empty()) o << "\n" << no_event_text(r) << "\n";
  auto cell = [](std::string s) {
    for (size_t p = 0; (p = s.find('|', p)) != std::string::npos; p += 2) s.replace(p, 1, "\\|");
    return s;
  };
  for (const auto& d : r.diagnoses) {
    o << "\n## Step " << d.event.step << ": " << d.event.kinds() << "\n\n";
    for (const auto& l : detection_lines(d.event, r.run.world())) o << "- " << l << "\n";
    o << "\n| # | Cause | Score | Evidence |\n|---|---|---:|---|\n";
    int i = 0;
    for (const auto& c : d.causes)
      o << "| " << ++i << " | " << c.cause << " | " << util::format_number("%.3f", c.score) << " | "
        << cell(c.evidence) << " |\n";
  }
  return o.str();
}

}  // namespace lockstep::reports
