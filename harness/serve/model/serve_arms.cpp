#include "harness/serve/model/serve_arms.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <utility>

#include "harness/serve/batch_plan.h"
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

// One turn: both plans batch by batch, interleaved by progress (the arm behind in its plan's padded
// tokens runs next, `a_first` decides ties), so drift on the machine hits both arms alike, as a
// training run's step-by-step turns do. Returns each arm's summed batch seconds.
std::pair<double, double> interleaved_turn(ModelService& sa, const std::vector<PlannedBatch>& pa,
                                           ModelService& sb, const std::vector<PlannedBatch>& pb,
                                           bool a_first) {
  const double ta = static_cast<double>(padded_tokens(pa)), tb = static_cast<double>(padded_tokens(pb));
  double da = 0, db = 0, secs_a = 0, secs_b = 0;
  size_t i = 0, j = 0;
  while (i < pa.size() || j < pb.size()) {
    const double fa = da / ta, fb = db / tb;
    const bool a_next = j == pb.size() || (i < pa.size() && (fa < fb || (fa == fb && a_first)));
    if (a_next) {
      secs_a += sa.run_batch(pa[i]);
      da += static_cast<double>(padded_tokens(pa[i]));
      ++i;
    } else {
      secs_b += sb.run_batch(pb[j]);
      db += static_cast<double>(padded_tokens(pb[j]));
      ++j;
    }
  }
  return {secs_a, secs_b};
}

// Each arm runs the fixed set's batches (its own plan) on this thread, the two interleaved batch
// by batch, serve.speed_pairs turns, the first batch of a turn alternating A, B, A, ...: the
// throughput check's pairs. One untimed turn first.
SpeedTurns speed_turns(Arm& a, Arm& b, std::ostream& log) {
  const ServeConfig& ca = a.result.cfg;
  const auto set = fixed_request_set(ca, ca.score_requests);
  const auto plan_a = plan_batches(ca, set), plan_b = plan_batches(b.result.cfg, set);
  SpeedTurns t;
  t.requests = static_cast<int64_t>(set.size());
  t.real_tokens = real_tokens(plan_a);
  t.baseline_batches = static_cast<int64_t>(plan_a.size());
  t.variant_batches = static_cast<int64_t>(plan_b.size());
  t.baseline_padded_tokens = padded_tokens(plan_a);
  t.variant_padded_tokens = padded_tokens(plan_b);
  interleaved_turn(*a.service, plan_a, *b.service, plan_b, true);
  for (int64_t k = 0; k < ca.speed_pairs; ++k) {
    const auto [sa, sb] = interleaved_turn(*a.service, plan_a, *b.service, plan_b, k % 2 == 0);
    t.baseline_s.push_back(sa);
    t.variant_s.push_back(sb);
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "serve: service speed in turns: %lld pairs, %lld real tokens in %lld vs %lld "
                "batches\n",
                static_cast<long long>(ca.speed_pairs), static_cast<long long>(t.real_tokens),
                static_cast<long long>(t.baseline_batches), static_cast<long long>(t.variant_batches));
  log << line << std::flush;
  return t;
}

// The capacity check's searches: search k of each arm on the same arrivals from the same start
// rate (the baseline's), in turns AB, BA, ... so drift hits both alike.
void capacity_turns(Arm& a, Arm& b, ServeComparison& out, std::ostream& log) {
  const double slo = a.result.cfg.slo_ms;
  const ServeConfig la = capacity_load(a.result.cfg, slo);
  ServeConfig lb = capacity_load(b.result.cfg, slo);
  lb.rate_rps = la.rate_rps, lb.seed = la.seed, lb.duration_s = la.duration_s;
  out.baseline_capacity.slo_ms = out.variant_capacity.slo_ms = slo;
  for (int s = 0; s < static_cast<int>(a.result.cfg.capacity_searches); ++s) {
    auto run_a = [&] {
      out.baseline_capacity.searches.push_back(
          search_capacity(la, *a.service, s, "serve: baseline capacity", log));
    };
    auto run_b = [&] {
      out.variant_capacity.searches.push_back(
          search_capacity(lb, *b.service, s, "serve: variant capacity", log));
    };
    if (s % 2 == 0) run_a(), run_b();
    else run_b(), run_a();
  }
  summarize(out.baseline_capacity);
  summarize(out.variant_capacity);
  out.judged_capacity = true;
}

// K copies of the baseline service, each with its weight matrices perturbed once by
// rounding-sized noise (its own noise seed), scoring the fixed request set.
ScoreEnvelope score_envelope(const config::Config& baseline, const ServeConfig& cfg,
                             const std::vector<double>& reference, const GateSettings& g,
                             std::ostream& log) {
  ScoreEnvelope e;
  e.noise = g.envelope_noise, e.noise_source = g.envelope_noise_source;
  e.runs = g.envelope_runs, e.factor = g.envelope_factor;
  e.raw.assign(reference.size(), 0.0);
  for (int64_t k = 1; k <= g.envelope_runs; ++k) {
    ModelService copy(baseline);
    copy.perturb_weights(g.envelope_noise, cfg.seed * 1000003ULL + static_cast<uint64_t>(k));
    const auto s = copy.score_set(cfg);
    for (size_t i = 0; i < std::min(s.size(), e.raw.size()); ++i)
      e.raw[i] = std::max(e.raw[i], std::fabs(s[i] - reference[i]));
  }
  char line[160];
  std::snprintf(line, sizeof line, "serve: score envelope from %lld perturbed baselines (u = %.3g)\n",
                static_cast<long long>(g.envelope_runs), g.envelope_noise);
  log << line << std::flush;
  return e;
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
  if (a.result.cfg.judges_capacity()) capacity_turns(a, b, out, log);
  else out.speed = speed_turns(a, b, log);
  a.result.scores = a.service->score_set(a.result.cfg);
  b.result.scores = b.service->score_set(b.result.cfg);
  std::vector<WindowStats> sa, sb;
  for (const auto& w : a.result.windows) sa.push_back(w.stats);
  for (const auto& w : b.result.windows) sb.push_back(w.stats);
  if (gate.approximate)
    out.envelope = score_envelope(baseline, a.result.cfg, a.result.scores, gate, log);
  CapacityPairs pairs{out.baseline_capacity.slo_ms, {}, {}};
  for (const auto& c : out.baseline_capacity.searches) pairs.baseline_rps.push_back(c.capacity_rps);
  for (const auto& c : out.variant_capacity.searches) pairs.variant_rps.push_back(c.capacity_rps);
  out.checks = judge(sa, sb, out.speed, a.result.scores, b.result.scores, gate,
                     out.judged_capacity ? &pairs : nullptr,
                     out.envelope ? &*out.envelope : nullptr);
  out.baseline = std::move(a.result);
  out.variant = std::move(b.result);
  out.wall_s = static_cast<double>(util::steady_now_ns() - t0) * 1e-9;
  return out;
}

}  // namespace lockstep::serve
