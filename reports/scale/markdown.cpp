// The scaling report as report.md: the Amdahl headline, failures and warnings, one table per
// series, the notes folded away.
#include <cmath>
#include <sstream>

#include "reports/markdown_reporter.h"
#include "reports/scale/reporters.h"
#include "reports/scale/wording.h"
#include "reports/text.h"

namespace lockstep::reports {

using namespace scale_text;
using text::fixed;

std::string ScaleMarkdownReporter::render(const scale::ScaleResult& r) const {
  std::ostringstream o;
  o << "## " << (r.exit_code == 0 ? "📈" : "❌") << " Lockstep scaling: " << markdown_escape(r.name)
    << "\n\n";
  o << markdown_escape(r.config) << " · " << modes_text(r) << " scaling · N = " << nprocs_text(r)
    << " · " << r.repeats << " repeat(s) × " << r.steps_timed << " timed steps · " << r.host_cores
    << " host cores, " << r.threads_per_rank << " thread(s) per rank · exit " << r.exit_code
    << "\n\n";
  if (const auto* h = r.headline(); h && h->fit.ok)
    o << "**Amdahl (" << scale::to_string(h->mode) << "): " << markdown_escape(fit_summary(h->fit))
      << "** — predicted " << markdown_escape(prediction_text(r, h->fit)) << "\n\n";
  for (const auto& f : r.failures) o << "> ❌ **Run failed:** " << markdown_escape(f) << "\n\n";
  for (const auto& w : r.warnings) o << "> ⚠️ " << markdown_escape(w) << "\n\n";
  for (const auto& s : r.series) {
    o << "### " << markdown_escape(series_caption(r, s)) << "\n\n";
    o << "| N | global batch | per-rank micro-batch | tokens/s | speed-up | efficiency | comm "
         "share | P50 ms | status |\n";
    o << "|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
    for (const auto& p : s.points) {
      std::string status = p.status == scale::PointStatus::Ok
                               ? (p.shared_with.empty() ? "ok" : "same run as " + p.shared_with)
                               : std::string(to_string(p.status)) + ": " + p.note;
      o << "| " << p.n << " | " << p.global_batch << " | "
        << (p.micro_batch ? std::to_string(p.micro_batch) : "-") << " | "
        << fixed(p.tokens_per_sec, 1) << " | "
        << (std::isfinite(p.speedup) ? fixed(p.speedup, 2) + "×" : "n/a") << " | "
        << pct(p.efficiency) << " | " << pct(p.comm_share) << " | " << fixed(p.step_ms_p50, 2)
        << " | " << markdown_escape(status) << " |\n";
    }
    o << "\nAmdahl fit: " << markdown_escape(fit_summary(s.fit));
    if (s.fit.ok) o << "; predicted " << markdown_escape(prediction_text(r, s.fit));
    o << "\n\n";
  }
  if (!r.notes.empty()) {
    o << "<details><summary>Notes</summary>\n\n";
    for (const auto& n : r.notes) o << "- " << markdown_escape(n) << "\n";
    o << "\n</details>\n";
  }
  return o.str();
}

}  // namespace lockstep::reports
