#include "reports/bisect_console.h"

#include <sstream>

namespace lockstep::reports {

std::string BisectConsoleReporter::render(const compare::BisectResult& r) const {
  std::ostringstream o;
  o << "\nbisect: " << r.trials.size() << " trials\n";
  for (const auto& t : r.trials) {
    o << "  " << (t.verdict == compare::Verdict::Pass ? "PASS" : "FAIL") << "  " << t.mode << ":";
    for (const auto& s : t.sets) o << " " << s;
    if (!t.detail.empty()) o << "\n        " << t.detail;
    o << "\n        report: " << t.report_dir << "/report.html\n";
  }
  if (r.culprits.empty())
    o << "no single knob breaks alignment or P99 on its own\n";
  else {
    o << "culprit(s):";
    for (const auto& c : r.culprits) o << " " << c;
    o << "\n";
  }
  if (!r.first_failing_cumulative.empty())
    o << "the cumulative run first fails when adding " << r.first_failing_cumulative << "\n";
  return o.str();
}

}  // namespace lockstep::reports
