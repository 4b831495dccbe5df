#include "harness/serve/model/serve_arms.h"

#include <memory>
#include <ostream>

#include "harness/serve/load.h"
#include "harness/serve/model/model_service.h"
#include "harness/util/clock.h"

namespace lockstep::serve {
namespace {

struct Arm {
  ArmResult result;
  std::unique_ptr<ModelService> service;
};

Arm make_arm(const config::Config& cfg, const std::string& label) {
  Arm a;
  a.result.label = label;
  a.result.config_path = cfg.path();
  a.result.config_hash = cfg.hash();
  a.result.cfg = ServeConfig::from(cfg);
  a.service = std::make_unique<ModelService>(cfg);
  a.result.device = a.service->device();
  a.result.precision = a.service->precision();
  return a;
}

void warm_up(Arm& a) {
  ServeConfig c = a.result.cfg;
  c.trace.clear();
  c.duration_s = std::min(1.0, c.duration_s), c.peak_duration_s = 0, c.peak_multiplier = 1;
  open_loop(c, make_schedule(c, c.seed ^ 0x3a3a3aULL), *a.service);
}

void run_window(Arm& a, uint64_t seed, std::ostream& log) {
  const auto schedule = make_schedule(a.result.cfg, seed);
  ArmWindow w;
  w.window = open_loop(a.result.cfg, schedule, *a.service);
  w.figures = window_figures(a.result.cfg, w.window.outcomes, w.window.duration_s);
  w.stats = window_stats(w.figures, w.window.outcomes);
  const Figures& f = w.figures.front();
  char line[256];
  std::snprintf(line, sizeof line,
                "serve: %s window %zu: %lld requests, P99 %.1f ms, within SLO %.1f%%, "
                "%.0f tokens/busy-s\n",
                a.result.label.c_str(), a.result.windows.size() + 1,
                static_cast<long long>(f.offered), f.p99.ms, 100 * f.slo_attainment,
                w.stats.busy_tokens_per_s);
  log << line << std::flush;
  a.result.windows.push_back(std::move(w));
}

void pool(ArmResult& r) {
  std::vector<std::vector<Outcome>> all;
  std::vector<double> durations;
  for (const auto& w : r.windows) {
    all.push_back(w.window.outcomes);
    durations.push_back(w.window.duration_s);
  }
  r.pooled = pooled_figures(r.cfg, all, durations);
}

}  // namespace

ArmResult serve_one(const config::Config& cfg, const std::string& label, int windows,
                    std::ostream& log) {
  Arm a = make_arm(cfg, label);
  warm_up(a);
  for (int k = 0; k < windows; ++k) run_window(a, a.result.cfg.seed + static_cast<uint64_t>(k), log);
  pool(a.result);
  a.result.scores = a.service->score_set(a.result.cfg);
  return std::move(a.result);
}

ServeComparison serve_compare(const config::Config& baseline, const config::Config& variant,
                              int windows, const GateSettings& gate, std::ostream& log) {
  const int64_t t0 = util::steady_now_ns();
  Arm a = make_arm(baseline, "baseline");
  Arm b = make_arm(variant, "variant");
  warm_up(a);
  warm_up(b);
  ServeComparison out;
  const uint64_t seed = a.result.cfg.seed;  // the same arrivals for both arms, window by window
  for (int k = 0; k < windows; ++k) {
    const uint64_t s = seed + static_cast<uint64_t>(k);
    if (k % 2 == 0) {
      run_window(a, s, log), run_window(b, s, log);
      out.order.insert(out.order.end(), {"A", "B"});
    } else {
      run_window(b, s, log), run_window(a, s, log);
      out.order.insert(out.order.end(), {"B", "A"});
    }
  }
  pool(a.result);
  pool(b.result);
  a.result.scores = a.service->score_set(a.result.cfg);
  b.result.scores = b.service->score_set(b.result.cfg);
  std::vector<WindowStats> sa, sb;
  for (const auto& w : a.result.windows) sa.push_back(w.stats);
  for (const auto& w : b.result.windows) sb.push_back(w.stats);
  out.checks = judge(sa, sb, a.result.scores, b.result.scores, gate);
  out.baseline = std::move(a.result);
  out.variant = std::move(b.result);
  out.wall_s = static_cast<double>(util::steady_now_ns() - t0) * 1e-9;
  return out;
}

}  // namespace lockstep::serve
