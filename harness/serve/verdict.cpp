#include "harness/serve/verdict.h"

#include <algorithm>
#include <cmath>

#include "harness/util/format.h"

namespace lockstep::serve {

std::string ci_name(double level) { return util::format_number("%g", 100 * level) + "% CI"; }

namespace {

using compare::Verdict;

// A significant effect in the failing direction fails; the whole CI on the allowed side passes.
Verdict timing_verdict(bool fail, bool pass) {
  return fail ? Verdict::Fail : pass ? Verdict::Pass : Verdict::Inconclusive;
}

// One-sided p of "mean(d) > 0" (the failing direction for d oriented so) from the paired t.
double p_greater(const stats::PairedT& t) {
  if (!(t.sd > 0)) return t.mean > 0 ? 0.0 : 1.0;
  const double stat = t.mean / (t.sd / std::sqrt(static_cast<double>(t.n)));
  return 1.0 - stats::student_t_cdf(stat, static_cast<double>(t.n - 1));
}

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.2f%%", x);
  return b;
}

// A log-ratio interval as % changes.
stats::Interval to_pct(stats::Interval i) {
  return stats::Interval{100 * std::expm1(i.lo), 100 * std::expm1(i.hi)};
}

// "90% CI [-3.10%, +1.20%]": a check's interval as its detail names it.
std::string ci_text(const ServeCheck& c) {
  return ci_name(c.ci_level) + " [" + pct(c.ci.lo) + ", " + pct(c.ci.hi) + "]";
}

double missed(const WindowStats& w) {
  return (1 - w.slo_attainment) * static_cast<double>(w.offered);
}

// Of all windows' requests, the share that missed the SLO, %.
double missed_pct(const std::vector<WindowStats>& ws, size_t n) {
  double miss = 0, offered = 0;
  for (size_t k = 0; k < n; ++k) miss += missed(ws[k]), offered += static_cast<double>(ws[k].offered);
  return offered > 0 ? 100 * miss / offered : 0;
}

// "slo attainment": t over the pairs' miss_log_odds_ratio; `p_adj` its Holm-adjusted p of "more
// misses".
ServeCheck slo_check(const std::vector<WindowStats>& base, const std::vector<WindowStats>& var,
                     size_t n, const stats::PairedT& t, double p_adj, double alpha) {
  ServeCheck c{"slo attainment", Verdict::Inconclusive, 100 * std::expm1(t.mean), to_pct(t.ci),
               p_adj, "", 1 - 2 * alpha};
  const bool fail = p_adj < alpha;
  const bool pass = !fail && (t.ci.hi <= 0 || t.sd == 0);
  c.verdict = timing_verdict(fail, pass);
  const double mb = missed_pct(base, n), mv = missed_pct(var, n);
  char b[240];
  std::snprintf(b, sizeof b,
                "missed the SLO: %.2f%% vs %.2f%% of requests (within: %+.2f points, variant - "
                "baseline); odds of a miss %s per window pair over %zu pairs, %s",
                mb, mv, mb - mv, pct(c.value_pct).c_str(), n, ci_text(c).c_str());
  c.detail = b;
  return c;
}

}  // namespace

WindowStats window_stats(const std::vector<Figures>& figures, const std::vector<Outcome>& outcomes) {
  WindowStats w;
  w.p99_ms = figures.front().p99.ms;
  w.slo_attainment = figures.front().slo_attainment;
  w.offered = figures.front().offered;
  // Each batch's run once: outcomes of one batch share started/done; sum per distinct batch.
  double busy = 0, tokens = 0;
  for (const Outcome& o : outcomes) {
    if (o.fate != Fate::Served) continue;
    tokens += static_cast<double>(o.len);
    busy += (o.done_s - o.started_s) / static_cast<double>(o.batch_size);
  }
  w.busy_tokens_per_s = busy > 0 ? tokens / busy : 0;
  return w;
}

double miss_log_odds_ratio(const WindowStats& baseline, const WindowStats& variant) {
  auto log_odds = [](const WindowStats& w) {
    const double miss = missed(w), within = static_cast<double>(w.offered) - miss;
    return std::log((miss + 0.5) / (within + 0.5));
  };
  return log_odds(variant) - log_odds(baseline);
}

namespace {

// Per window pair (or turn pair, or capacity search pair), variant against baseline, as logs.
struct PairDeltas {
  std::vector<double> p99, thr, slo;
};

PairDeltas pair_deltas(const std::vector<WindowStats>& base, const std::vector<WindowStats>& var,
                       const SpeedTurns& speed, const CapacityPairs* capacity) {
  PairDeltas d;
  for (size_t k = 0; k < std::min(base.size(), var.size()); ++k) {
    const double a = base[k].p99_ms, b = var[k].p99_ms;
    // An unserved tail (inf) on one side only is as bad as it gets; on both, no information.
    d.p99.push_back(std::isinf(a) && std::isinf(b) ? 0.0
                    : std::isinf(b)               ? 10.0
                    : std::isinf(a)               ? -10.0
                                                  : std::log(b / a));
    d.slo.push_back(miss_log_odds_ratio(base[k], var[k]));
  }
  if (capacity) {
    for (size_t k = 0; k < std::min(capacity->baseline_rps.size(), capacity->variant_rps.size());
         ++k) {
      const double a = capacity->baseline_rps[k], b = capacity->variant_rps[k];
      // No capacity at all (not even the lowest rate within the SLO) on one side only: as bad
      // (or as good) as it gets; on both, no information.
      d.thr.push_back(a <= 0 && b <= 0 ? 0.0 : b <= 0 ? -10.0 : a <= 0 ? 10.0 : std::log(b / a));
    }
  } else {
    for (size_t k = 0; k < std::min(speed.baseline_s.size(), speed.variant_s.size()); ++k)
      d.thr.push_back(std::log(speed.baseline_s[k] / speed.variant_s[k]));  // same tokens
  }
  return d;
}

// A check of a paired t on log ratios: fails on its Holm-adjusted p, passes when the whole
// interval is on the allowed side of `bound` (a log; `upper`: the bound is a ceiling).
ServeCheck log_ratio_check(const char* name, const stats::PairedT& t, double p_adj, double bound,
                           bool upper, double alpha, double level) {
  ServeCheck c{name, Verdict::Inconclusive, 100 * std::expm1(t.mean), to_pct(t.ci), p_adj, "",
               level};
  const bool fail = p_adj < alpha;
  c.verdict = timing_verdict(fail, !fail && (upper ? t.ci.hi <= bound : t.ci.lo >= bound));
  return c;
}

std::string throughput_detail(const ServeCheck& c, size_t pairs, const SpeedTurns& speed,
                              const CapacityPairs* capacity) {
  const std::string ci = ci_text(c);
  if (capacity) {
    char b[160];
    std::snprintf(b, sizeof b, "capacity at P99 <= %g ms ", capacity->slo_ms);
    return b + pct(c.value_pct) + " over " + std::to_string(pairs) + " search pairs (median " +
           util::format_number("%.1f", stats::median(capacity->baseline_rps)) + " vs " +
           util::format_number("%.1f", stats::median(capacity->variant_rps)) + " req/s), " + ci;
  }
  return "service speed " + pct(c.value_pct) + " over " + std::to_string(pairs) + " turn pairs (" +
         std::to_string(speed.real_tokens) + " real tokens in " +
         std::to_string(speed.baseline_batches) + " vs " + std::to_string(speed.variant_batches) +
         " batches), " + ci;
}

// "same math": the fixed requests' scores, by the tolerance or (approximate) c x the envelope.
ServeCheck same_math_check(const std::vector<double>& base_scores,
                           const std::vector<double>& var_scores, const GateSettings& g,
                           const ScoreEnvelope* envelope) {
  double worst = 0, sum = 0;
  const size_t m = std::min(base_scores.size(), var_scores.size());
  for (size_t i = 0; i < m; ++i) {
    worst = std::max(worst, std::fabs(var_scores[i] - base_scores[i]));
    sum += std::fabs(var_scores[i] - base_scores[i]);
  }
  if (base_scores.size() != var_scores.size() || m == 0) worst = sum = INFINITY;
  const double mean = sum / static_cast<double>(std::max<size_t>(m, 1));
  ServeCheck c{"same math", Verdict::Inconclusive, worst, {}, 0, ""};
  char b[400];
  if (envelope && envelope->raw.size() == m && m > 0) {
    double emax = 0, esum = 0;
    for (double e : envelope->raw) emax = std::max(emax, e), esum += e;
    const double emean = esum / static_cast<double>(m), k = envelope->factor;
    c.verdict = compare::verdict_from(worst <= k * emax && mean <= k * emean);
    std::snprintf(b, sizeof b,
                  "approximate change: max |score delta| %.3g (bound %g x envelope %.3g), "
                  "mean %.3g (bound %g x %.3g) over %zu fixed requests; envelope of %lld "
                  "perturbed baselines, u = %.3g (%s)",
                  worst, k, emax, mean, k, emean, m, static_cast<long long>(envelope->runs),
                  envelope->noise, envelope->noise_source.c_str());
  } else {
    c.verdict = compare::verdict_from(worst <= g.tolerance);
    std::snprintf(b, sizeof b, "max |score delta| %.3g over %zu fixed requests (tolerance %.3g)",
                  worst, m, g.tolerance);
  }
  c.detail = b;
  return c;
}

}  // namespace

std::vector<ServeCheck> judge(const std::vector<WindowStats>& base,
                              const std::vector<WindowStats>& var, const SpeedTurns& speed,
                              const std::vector<double>& base_scores,
                              const std::vector<double>& var_scores, const GateSettings& g,
                              const CapacityPairs* capacity, const ScoreEnvelope* envelope) {
  const size_t n = std::min(base.size(), var.size());
  const PairDeltas d = pair_deltas(base, var, speed, capacity);
  const double level = 1 - 2 * g.alpha;  // the two-sided interval whose edge is the one-sided test
  const auto t_p99 = stats::paired_t(d.p99, level);
  const auto t_thr = stats::paired_t(d.thr, level);
  const auto t_slo = stats::paired_t(d.slo, level);
  const double red = std::log1p(g.max_p99_regression_pct / 100);
  const double floor = std::log1p(-g.max_slowdown_pct / 100);
  // Failing directions as "greater than": p99 above the red line, throughput below its floor,
  // more misses of the SLO than the baseline's.
  auto shifted = [](stats::PairedT t, double by, double sign) {
    t.mean = sign * (t.mean - by);
    return t;
  };
  const auto adj = stats::holm_adjust({p_greater(shifted(t_p99, red, 1)),
                                       p_greater(shifted(t_thr, floor, -1)), p_greater(t_slo)});

  std::vector<ServeCheck> out;
  out.push_back(log_ratio_check("p99 latency", t_p99, adj[0], red, true, g.alpha, level));
  out.back().detail = "P99 " + pct(out.back().value_pct) + " over " + std::to_string(n) +
                      " window pairs, " + ci_text(out.back()) + "; red line " +
                      pct(g.max_p99_regression_pct);
  out.push_back(log_ratio_check(capacity ? "capacity" : "throughput", t_thr, adj[1], floor, false,
                                g.alpha, level));
  out.back().detail = throughput_detail(out.back(), d.thr.size(), speed, capacity);
  out.push_back(slo_check(base, var, n, t_slo, adj[2], g.alpha));
  out.push_back(same_math_check(base_scores, var_scores, g, envelope));
  return out;
}

}  // namespace lockstep::serve
