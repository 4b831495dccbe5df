#include "reports/run_console.h"

#include <cmath>
#include <cstdio>

namespace lockstep::reports {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (std::fabs(b) >= 1024 && i < 4) b /= 1024, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.1f %s", b, units[i]);
  return buf;
}

void print_run_summary(std::ostream& os, const RunSummary& s, const std::filesystem::path& out) {
  char buf[256];
  os << "\n" << s.name << ": " << s.steps << " steps, status " << to_string(s.status);
  if (!s.ok()) os << " (" << s.failure << ")";
  os << "\n";
  std::snprintf(buf, sizeof buf, "  final loss      %.4f", s.final_loss);
  os << buf;
  if (s.loss_floor) {
    std::snprintf(buf, sizeof buf, "   (achievable floor %.4f)", *s.loss_floor);
    os << buf;
  }
  os << "\n";
  std::snprintf(buf, sizeof buf, "  tokens/s        %.0f over %lld timed steps\n", s.tokens_per_sec,
                static_cast<long long>(s.timed_steps));
  os << buf;
  if (s.mfu)
    std::snprintf(buf, sizeof buf, "  MFU             %.1f%% of %.1f GFLOP/s (%s)\n", 100 * *s.mfu,
                  *s.peak_flops / 1e9, s.peak_flops_source.c_str());
  else
    std::snprintf(buf, sizeof buf, "  MFU             unknown (%s)\n", s.peak_flops_source.c_str());
  os << buf;
  std::snprintf(buf, sizeof buf, "  step ms         P50 %.2f  P95 %.2f  P99 %.2f\n", s.step_ms.p50,
                s.step_ms.p95, s.step_ms.p99);
  os << buf;
  os << "  time            ";
  bool phases = false;  // an external trainer may report none
  for (const auto& [k, v] : s.phase_share) phases = phases || v > 0;
  if (!phases) os << "no phase times reported  ";
  for (const auto& p : phase_names()) {
    if (!phases) break;
    auto it = s.phase_share.find(p);
    std::snprintf(buf, sizeof buf, "%s %.0f%%  ", p.c_str(),
                  it == s.phase_share.end() ? 0.0 : 100 * it->second);
    os << buf;
  }
  os << "(" << s.bound << ")\n";
  os << "  peak memory     "
     << (s.peak_memory_bytes > 0 ? human_bytes(static_cast<double>(s.peak_memory_bytes)) + " tensors"
                                 : std::string("tensors not reported"))
     << ", " << human_bytes(static_cast<double>(s.peak_rss_bytes)) << " RSS\n";
  os << "  outputs         " << out.string() << "/{metrics.jsonl,summary.json,config.toml}\n";
}

}  // namespace lockstep::reports
