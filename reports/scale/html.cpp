// The scaling report as report.html: one self-contained page (inline CSS and SVG, no scripts):
// the Amdahl fit with its predictions, the speed-up plot, one table per series, notes, host.
#include <cmath>
#include <sstream>

#include "harness/util/format.h"
#include "reports/html_page.h"
#include "reports/scale/reporters.h"
#include "reports/scale/wording.h"
#include "reports/text.h"

namespace lockstep::reports {
namespace {

using namespace scale_text;
using text::fixed;

// The scaling report's own rules, on top of the shared page stylesheet (reports/html_page.h).
const char* kScaleCss = R"css(.banner.pass{background:#1864ab}
.big{font-size:22px;font-weight:700}
.skip{color:var(--muted);font-style:italic}span.fail{color:var(--bad);font-weight:600}
figure{max-width:900px}
details summary{cursor:pointer;font-weight:600}
)css";

}  // namespace

std::string ScaleHtmlReporter::render(const scale::ScaleResult& r) const {
  std::ostringstream o;
  const bool ok = r.exit_code == 0;
  o << html_page_begin("Lockstep scaling: " + r.name, kScaleCss);
  o << "<div class=\"banner " << (ok ? "pass" : "fail") << "\"><h1>Scaling: " << html_escape(r.name)
    << (ok ? "" : " — a run failed") << "</h1><p><code style=\"color:#fff;background:transparent\">"
    << html_escape(r.config) << "</code> · " << html_escape(modes_text(r))
    << " scaling · N = " << html_escape(nprocs_text(r)) << " · " << r.repeats << " repeat(s) × "
    << r.steps_timed << " timed steps · exit " << r.exit_code << "</p></div>\n<main>\n";
  for (const auto& f : r.failures)
    o << "<div class=\"notice bad\"><b>Run failed:</b> " << html_escape(f) << "</div>\n";
  for (const auto& w : r.warnings) o << "<div class=\"notice\">⚠ " << html_escape(w) << "</div>\n";

  if (const auto* h = r.headline()) {
    const auto& f = h->fit;
    o << "<section><h2>Amdahl's law (" << html_escape(scale::to_string(h->mode))
      << " scaling)</h2>\n";
    if (f.ok) {
      o << "<p><span class=\"big\">P = " << fixed(f.p, 3)
        << "</span> <span class=\"muted\">parallel fraction";
      if (f.clamped)
        o << " (fitted "
          << html_escape(std::isfinite(f.p_raw) ? fixed(f.p_raw, 3)
                                                : std::string(f.p_raw > 0 ? "+inf" : "-inf"))
          << ", clamped)";
      o << " · " << html_escape(fit_quality(f)) << "</span></p>\n";
      o << "<p class=\"muted\">speed-up(N) = 1 / ((1 − P) + P / N); least squares of 1/speed-up = "
           "a + b/N on the measured "
           "points (a = "
        << fixed(f.a, 4) << ", b = " << fixed(f.b, 4)
        << "), P = b / (a + b). Speed-ups are relative to N = "
        << util::format_number("%.10g", f.ref_n) << ".</p>\n";
      o << "<table><tr>" << th("ranks") << th("predicted speed-up", true) << th("vs 1 rank", true)
        << th("efficiency", true) << "</tr>\n";
      for (double n : r.predict_at) {
        const double sp = f.predict(n);
        o << "<tr>" << td(util::format_number("%.10g", n)) << td(times(sp), true)
          << td(times(f.predict_vs_one(n)), true) << td(pct(sp / (n / f.ref_n)), true) << "</tr>\n";
      }
      o << "<tr>" << td("∞ (ceiling)")
        << td(times(f.max_speedup() / scale::amdahl_speedup(f.p, f.ref_n)), true)
        << td(times(f.max_speedup()), true) << td("0%", true) << "</tr>\n</table>\n";
    } else {
      o << "<p>No fit.</p>\n";
    }
    if (!f.notes.empty()) {
      o << "<ul class=\"muted\">";
      for (const auto& n : f.notes) o << "<li>" << html_escape(n) << "</li>";
      o << "</ul>\n";
    }
    o << "</section>\n";
  }

  Plot p = scale_plot(r);
  o << "<section><h2>Speed-up vs ranks</h2>\n<figure><figcaption>measured strong and weak scaling, "
       "the Amdahl fit, the ideal line "
       "and the predictions at "
    << html_escape([&] {
         std::string s;
         for (double n : r.predict_at)
           s += (s.empty() ? "" : " and ") + util::format_number("%.10g", n);
         return s;
       }())
    << " ranks (log-log)</figcaption>"
    << (p.ok() ? p.svg
               : "<p class=\"unavailable\">plot unavailable: " + html_escape(p.error) + "</p>")
    << "</figure></section>\n";

  for (const auto& s : r.series) {
    o << "<section><h2>" << html_escape(series_caption(r, s)) << "</h2>\n<table><tr>"
      << th("N", true) << th("global batch", true) << th("per-rank micro-batch", true)
      << th("tokens/s", true) << th("speed-up", true) << th("efficiency", true)
      << th("comm share", true) << th("P50 ms", true) << th("status") << "</tr>\n";
    for (const auto& pt : s.points) {
      std::string status =
          pt.status == scale::PointStatus::Ok
              ? (pt.shared_with.empty() ? "ok" : "same run as " + pt.shared_with)
              : "<span class=\"" +
                    std::string(pt.status == scale::PointStatus::Failed ? "fail" : "skip") + "\">" +
                    html_escape(std::string(to_string(pt.status)) + ": " + pt.note) + "</span>";
      std::string reps;
      for (double x : pt.tokens_per_sec_repeats) reps += (reps.empty() ? "" : ", ") + fixed(x, 1);
      o << "<tr>" << td(std::to_string(pt.n), true) << td(std::to_string(pt.global_batch), true)
        << td(pt.micro_batch ? std::to_string(pt.micro_batch) : "-", true)
        << td("<span title=\"repeats: " + html_escape(reps) + "\">" + fixed(pt.tokens_per_sec, 1) +
                  "</span>",
              true)
        << td(std::isfinite(pt.speedup) ? fixed(pt.speedup, 2) + "×" : "n/a", true)
        << td(pct(pt.efficiency), true) << td(pct(pt.comm_share), true)
        << td(fixed(pt.step_ms_p50, 2), true) << td(status) << "</tr>\n";
    }
    o << "</table>\n<p class=\"muted\">Amdahl fit: " << html_escape(fit_summary(s.fit));
    if (s.fit.ok) o << " · predicted " << html_escape(prediction_text(r, s.fit));
    o << "</p></section>\n";
  }

  if (!r.notes.empty()) {
    o << "<section><h2>Notes</h2><ul>";
    for (const auto& n : r.notes) o << "<li>" << html_escape(n) << "</li>";
    o << "</ul></section>\n";
  }
  o << "<section><details><summary>Host and environment</summary><table>\n";
  o << "<tr>" << td("host cores") << td(std::to_string(r.host_cores)) << "</tr>";
  o << "<tr>" << td("threads per rank") << td(std::to_string(r.threads_per_rank)) << "</tr>";
  o << "<tr>" << td("device") << td(html_escape(r.device)) << "</tr>";
  o << "<tr>" << td("1-minute load average at start") << td(fixed(r.load_average, 2)) << "</tr>";
  o << "<tr>" << td("steps per run")
    << td(std::to_string(r.stop_after) + " (" + std::to_string(r.warmup_steps) + " warmup + " +
          std::to_string(r.profile_window) + " profiled + " + std::to_string(r.steps_timed) +
          " timed)")
    << "</tr>\n";
  for (const auto& [k, v] : r.env)
    o << "<tr>" << td(html_escape(k)) << td("<code>" + html_escape(v) + "</code>") << "</tr>\n";
  o << "</table></details></section>\n</main>\n<footer>Lockstep scaling report";
  if (!r.out_dir.empty()) o << " · " << html_escape(r.out_dir);
  o << " · " << fixed(r.wall_seconds, 1) << " s</footer>\n" << html_page_end();
  return o.str();
}

}  // namespace lockstep::reports
