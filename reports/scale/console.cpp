// The scaling table on the terminal: per series one row per N, the Amdahl fit and the
// predictions, then failures, warnings, notes and the exit code.
#include <cmath>
#include <sstream>

#include "reports/scale/reporters.h"
#include "reports/scale/wording.h"
#include "reports/text.h"

namespace lockstep::reports {
namespace {

using scale::ScalePoint;
using namespace scale_text;
using text::fixed;

std::string pad(const std::string& s, size_t w, bool right = true) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

std::string status_cell(const ScalePoint& p) {
  if (p.status == scale::PointStatus::Skipped) return "skipped";
  if (p.status == scale::PointStatus::Failed) return "FAILED";
  return p.shared_with.empty() ? "" : "= " + p.shared_with;
}

}  // namespace

std::string ScaleConsoleReporter::render(const scale::ScaleResult& r) const {
  std::ostringstream o;
  o << "lockstep scale: " << r.name << " (" << r.config << ") - " << modes_text(r)
    << " scaling, N = " << nprocs_text(r) << "; " << r.repeats << " repeat(s), " << r.steps_timed
    << " timed steps per run\n";
  o << "host: " << r.host_cores << " cores, " << r.threads_per_rank
    << " thread(s) per rank, device " << r.device << ", load average " << fixed(r.load_average, 2)
    << "\n";
  for (const auto& s : r.series) {
    o << "\n" << series_caption(r, s) << "\n";
    o << "  " << pad("N", 4) << pad("batch", 7) << pad("per-rank", 10) << pad("tokens/s", 12)
      << pad("speed-up", 10) << pad("efficiency", 12) << pad("comm", 8) << pad("P50 ms", 10)
      << "  \n";
    for (const auto& p : s.points) {
      o << "  " << pad(std::to_string(p.n), 4) << pad(std::to_string(p.global_batch), 7)
        << pad(p.micro_batch ? std::to_string(p.micro_batch) : "-", 10)
        << pad(fixed(p.tokens_per_sec, 1), 12)
        << pad(std::isfinite(p.speedup) ? fixed(p.speedup, 2) + "x" : "n/a", 10)
        << pad(pct(p.efficiency), 12) << pad(pct(p.comm_share), 8)
        << pad(fixed(p.step_ms_p50, 2), 10) << "  " << status_cell(p) << "\n";
    }
    o << "  Amdahl fit (" << scale::to_string(s.mode) << "): " << fit_summary(s.fit) << "\n";
    if (s.fit.ok) o << "  predicted speed-up: " << prediction_text(r, s.fit) << "\n";
  }
  if (!r.failures.empty()) {
    o << "\nFAILED runs:\n";
    for (const auto& f : r.failures) o << "  x " << f << "\n";
  }
  if (!r.warnings.empty()) {
    o << "\nwarnings:\n";
    for (const auto& w : r.warnings) o << "  ! " << w << "\n";
  }
  if (!r.notes.empty()) {
    o << "\nnotes:\n";
    for (const auto& n : r.notes) o << "  - " << n << "\n";
  }
  o << "\nexit " << r.exit_code << " ("
    << (r.exit_code == 0 ? "all runs succeeded" : "a run failed") << "), "
    << fixed(r.wall_seconds, 1) << " s\n";
  return o.str();
}

}  // namespace lockstep::reports
