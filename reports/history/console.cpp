// The history report on the terminal: one line per series and per flagged change, then the
// verdict over the window.
#include "reports/history/reporters.h"
#include "harness/util/format.h"
#include "reports/history/wording.h"

namespace lockstep::reports {

std::string HistoryConsoleReporter::render(const history::Report& r) const {
  std::string o;
  size_t runs = 0;
  for (const auto& s : r.series) runs += s.points.size();
  o += "Lockstep history report: " + std::to_string(r.series.size()) + " series, " +
       util::count_of(static_cast<long long>(runs), "run");
  if (!r.history_path.empty()) o += " (" + r.history_path + ")";
  o += "\n";
  for (const auto& s : r.series) {
    o += "  " + s.config_name + " [" + s.config_hash + "] on " + s.host + " (" + s.device + "), " +
         util::count_of(static_cast<long long>(s.points.size()), "run") + ": ";
    const std::string few = history_text::too_few_runs(s, r.options);
    o += !s.flags.empty() ? std::to_string(s.flags.size()) + " flagged\n"
         : few.empty()    ? "no change flagged\n"
                          : few + "\n";
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
