// The diagnosis as diagnosis.html: one self-contained page (inline CSS and SVG, no scripts): the
// loss curve drawn by gnuplot with each event marked, the step time per rank, a causes table per
// event.
#include <cmath>
#include <sstream>

#include "harness/util/format.h"
#include "reports/diagnose/plots.h"
#include "reports/diagnose/reporters.h"
#include "reports/diagnose/wording.h"
#include "reports/html_page.h"

namespace lockstep::reports {
namespace {

// The diagnosis page's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kDiagnosisCss = R"css(.banner.ok{background:var(--ok)}.banner.bad{background:var(--bad)}
.banner h1{font-size:24px;letter-spacing:normal}
th.num{text-align:left}
td.num{white-space:nowrap}
tr.top td{background:#fff5f5;font-weight:600}
.bar{display:inline-block;height:8px;background:var(--bad);border-radius:4px;vertical-align:middle;margin-right:6px}
ul.det{margin:4px 0 8px;padding-left:20px}
)css";

}  // namespace

using namespace diagnose_text;

std::string DiagnosisHtmlReporter::render(const diagnose::DiagnoseReport& r) const {
  std::ostringstream o;
  const bool events = !r.diagnoses.empty();
  o << html_page_begin("Lockstep diagnosis: " + (r.name.empty() ? r.run_dir : r.name),
                       kDiagnosisCss)
    << "<header class=\"banner " << (events ? "bad" : "ok") << "\"><h1>"
    << (events || diagnose::loss_coverage(r.run, r.thresholds).none() ? events_text(r)
                                                                      : std::string("No events"))
    << "</h1><p>" << html_escape(header_line(r)) << "</p></header>\n<main>\n";
  o << "<section><h2>Loss and step time</h2>\n";
  if (!events) o << "<p class=\"muted\">" << html_escape(no_event_text(r)) << ".</p>\n";
  o << "<div class=\"plots\">" << figure("Loss vs step (events marked)", diagnosis_loss_plot(r))
    << figure("Step time per rank (timed steps, log scale)", diagnosis_time_plot(r))
    << "</div></section>\n";
  for (const auto& d : r.diagnoses) {
    o << "<section id=\"step-" << d.event.step << "\"><h2>Step " << d.event.step;
    if (d.event.last_step != d.event.step) o << "–" << d.event.last_step;
    o << ": " << html_escape(d.event.kinds()) << "</h2>\n";
    if (!d.explained()) o << "<p class=\"muted\">Unexplained: no cause scores 0.2 or more.</p>\n";
    o << "<ul class=\"det\">";
    for (const auto& l : detection_lines(d.event, r.run.world()))
      o << "<li>" << html_escape(l) << "</li>";
    o << "</ul>\n<table><tr><th>#</th><th>Cause</th><th "
         "class=\"num\">Score</th><th>Evidence</th></tr>\n";
    int i = 0;
    for (const auto& c : d.causes) {
      const bool top = i++ == 0;
      o << "<tr" << (top ? " class=\"top\"" : "") << "><td>" << i << "</td><td>"
        << html_escape(c.cause) << "</td><td class=\"num\">"
        << "<span class=\"bar\" style=\"width:" << static_cast<int>(std::lround(c.score * 60))
        << "px\"></span>" << util::format_number("%.3f", c.score) << "</td><td>"
        << html_escape(c.evidence) << "</td></tr>\n";
    }
    o << "</table></section>\n";
  }
  o << "<section><details><summary>How causes are scored</summary><p class=\"muted\">Causes are "
       "checked in the standard order "
       "data → learning rate → gradient explosion → numerics → hardware → distributed sync; each "
       "gets a score in [0, 1] from the "
       "signals the run logged around the event, ties keep that order. \"hardware\" is a guess: "
       "the run logs no hardware counters. "
       "Thresholds and formulas: harness/diagnose/spikes.h and causes.h.</p></details></section>\n";
  o << "</main>\n<footer>Lockstep diagnosis · " << html_escape(r.run_dir) << "</footer>\n"
    << html_page_end();
  return o.str();
}

}  // namespace lockstep::reports
