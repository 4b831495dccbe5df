// The serving gate (issue 37): two services' windows, taken in turns (ABBA...) under the same
// arrivals per window, judged as matched pairs, and the scores of a fixed request set.
//   p99 latency     ln(P99 variant / P99 baseline) per window pair: fails when significantly above
//                   ln(1 + gate.max_p99_regression_pct) (the red line, default 0%)
//   throughput      the service's speed, in turns: each arm runs the fixed request set, batched as
//                   its own saturated batcher would (batch_plan.h), on one thread, AB BA AB ...,
//                   serve.speed_pairs times; real tokens per second, ln(variant / baseline) per
//                   pair. (The served rate of an open loop below saturation is the offered rate
//                   whatever the service, and busy time under load moved -19..+30% between the
//                   arms of one A/A window pair with contention and the batches' mix: measured,
//                   bench/RESULTS.md.) Fails when
//                   significantly below -gate.max_slowdown_pct
//   slo attainment  the odds of missing serve.slo_ms (missed / within), ln(odds variant / odds
//                   baseline) per window pair, half a request added to each count (a window
//                   without a miss, or without a hit, stays finite): fails when significantly
//                   above 0, passes when the whole interval is below it (or every pair is equal).
//                   Not the difference of the shares in points: that scales with how hard each
//                   window's peak hit the baseline (a calm window 1 point, a stormy one 38), so 5
//                   pairs that all favour the variant had an interval across 0 (issue 54:
//                   inconclusive 13 times in 20)
//   same math       max |score variant - score baseline| <= gate.tolerance
// Holm over the three timing checks at gate.alpha; a check neither failed nor passed is
// inconclusive (gate.on_inconclusive decides the exit, as for training).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/serve/figures.h"
#include "harness/stats/statistics.h"
#include "harness/vocab/compare_kinds.h"

namespace lockstep::serve {

// One window of one arm, as the gate needs it.
struct WindowStats {
  double p99_ms = 0;
  double busy_tokens_per_s = 0;  // real tokens / the workers' summed batch time
  double slo_attainment = 0;
  int64_t offered = 0;  // requests offered in the window (the same arrivals for both arms)
};
WindowStats window_stats(const std::vector<Figures>& figures, const std::vector<Outcome>& outcomes);

// The service-speed turns of a comparison: seconds per run of each arm's plan, pair by pair.
struct SpeedTurns {
  int64_t requests = 0, real_tokens = 0;  // the fixed set's (the same for both arms)
  int64_t baseline_batches = 0, variant_batches = 0;
  int64_t baseline_padded_tokens = 0, variant_padded_tokens = 0;
  std::vector<double> baseline_s, variant_s;
};

// The slo attainment check's statistic for one window pair: the log odds ratio of a miss,
// ln(odds variant / odds baseline), odds = (missed + 1/2) / (within + 1/2) (missed = (1 -
// attainment) x offered; Haldane's half). With few misses it is about ln(misses variant / misses
// baseline); with few hits, about -ln(hits variant / hits baseline). 0 when both met the SLO
// with every request; negative when the variant missed fewer.
double miss_log_odds_ratio(const WindowStats& baseline, const WindowStats& variant);

struct ServeCheck {
  std::string name;
  compare::Verdict verdict = compare::Verdict::Inconclusive;
  double value_pct = 0;  // the pooled effect (variant vs baseline), % (attainment: of the odds of a miss)
  stats::Interval ci;    // of the effect, same unit
  double p = 0;          // Holm-adjusted, one-sided in the failing direction
  std::string detail;
  double ci_level = 0;   // ci's two-sided level (1 - 2 alpha: its edge is the one-sided test); 0: none
};

// "90% CI": what an interval of that two-sided level is called, in details and column heads.
std::string ci_name(double level);

struct GateSettings {
  double alpha = 0.05;
  double max_p99_regression_pct = 0;
  double max_slowdown_pct = 0;
  double tolerance = 5e-4;
  // An approximate change (the changed keys' knob class, or [gate] alignment = "approximate"):
  // "same math" by the noise envelope of the fixed set's scores, not the tolerance.
  bool approximate = false;
  double envelope_noise = 0;  // u: the relative weight noise (the variant's unit roundoff)
  std::string envelope_noise_source;
  int64_t envelope_runs = 3;  // K
  double envelope_factor = 3;  // c
};

// The noise envelope of the fixed request set's scores: K copies of the baseline service whose
// weight matrices were multiplied once by (1 + e), e ~ U(-u, u), each its own noise seed;
// raw[i] = max_k |score_k[i] - baseline[i]|.
struct ScoreEnvelope {
  std::vector<double> raw;
  double noise = 0;
  std::string noise_source;
  int64_t runs = 0;
  double factor = 3;
};

// serve.throughput_check = "capacity": each arm's capacity at the SLO per search, search k of
// both arms on the same arrivals (a pair), req/s (0: not even the lowest rate probed was within).
struct CapacityPairs {
  double slo_ms = 0;
  std::vector<double> baseline_rps, variant_rps;
};

// The checks, in order: "p99 latency", "throughput" (or "capacity" when `capacity` is given: the
// paired log capacity ratio in place of the service speed's), "slo attainment", "same math".
// The three timing checks' p values are Holm-adjusted together. "same math" with an `envelope`
// (an approximate change): max |delta| <= c max raw and mean |delta| <= c mean raw over the set
// (the training envelope's check-step and curve rules, over requests instead of steps);
// otherwise max |delta| <= gate.tolerance.
std::vector<ServeCheck> judge(const std::vector<WindowStats>& baseline,
                              const std::vector<WindowStats>& variant, const SpeedTurns& speed,
                              const std::vector<double>& baseline_scores,
                              const std::vector<double>& variant_scores, const GateSettings& g,
                              const CapacityPairs* capacity = nullptr,
                              const ScoreEnvelope* envelope = nullptr);

}  // namespace lockstep::serve
