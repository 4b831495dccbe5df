// The history report on the terminal: one line per series and per flagged change, then the
// verdict over the window.
#include "reports/history/reporters.h"
#include "reports/history/wording.h"

namespace lockstep::reports {

std::string HistoryConsoleReporter::render(const history::Report& r) const {
  std::string o;
  size_t runs = 0;
  for (const auto& s : r.series) runs += s.points.size();
  o += "Lockstep history report: " + std::to_string(r.series.size()) + " series, " +
       std::to_string(runs) + " runs";
  if (!r.history_path.empty()) o += " (" + r.history_path + ")";
  o += "\n";
  for (const auto& s : r.series) {
    o += "  " + s.config_name + " [" + s.config_hash + "] on " + s.host + " (" + s.device + "), " +
         std::to_string(s.points.size()) + " runs: ";
    o += s.flags.empty() ? "no change flagged\n" : std::to_string(s.flags.size()) + " flagged\n";
    for (const auto& f : s.flags)
      o += std::string("    ") + (f.in_window && f.regression ? "! " : "  ") +
           history_text::describe(f) + (f.in_window ? " [in window]" : "") + "\n";
  }
  o += r.regressions_in_window
           ? std::to_string(r.regressions_in_window) + " regression(s) within the last " +
                 std::to_string(r.options.window) + " commits: exit 1\n"
           : "no regression within the last " + std::to_string(r.options.window) + " commits\n";
  return o;
}

}  // namespace lockstep::reports
