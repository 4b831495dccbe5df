// The diagnosis on the terminal: the run, then per event its detections and ranked causes.
#include <cstdio>
#include <sstream>

#include "reports/diagnose/reporters.h"
#include "reports/diagnose/wording.h"

namespace lockstep::reports {

using namespace diagnose_text;

std::string DiagnosisConsoleReporter::render(const diagnose::DiagnoseReport& r) const {
  std::ostringstream o;
  o << "lockstep diagnose: " << header_line(r) << ": " << events_text(r) << "\n";
  if (r.diagnoses.empty()) o << "  " << no_event_text(r) << "\n";
  for (const auto& d : r.diagnoses) {
    o << "\nstep " << d.event.step;
    if (d.event.last_step != d.event.step) o << "-" << d.event.last_step;
    o << ": " << d.event.kinds()
      << (d.explained() ? "" : " (unexplained: no cause scores 0.2 or more)") << "\n";
    for (const auto& l : detection_lines(d.event, r.run.world())) o << "    " << l << "\n";
    int i = 0;
    for (const auto& c : d.causes) {
      char head[48];
      std::snprintf(head, sizeof head, "  %d. %-9s %5.3f  ", ++i, c.cause.c_str(), c.score);
      o << head << c.evidence << "\n";
    }
  }
  return o.str();
}

}  // namespace lockstep::reports
