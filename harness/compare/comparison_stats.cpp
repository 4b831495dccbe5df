#include "harness/compare/comparison_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/compare/envelope.h"
#include "harness/stats/statistics.h"
#include "harness/runs/summary.h"

namespace lockstep::compare {

std::string round3(double x) {
  if (!std::isfinite(x)) return "nan";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

KnobReport classify_changes(const std::vector<config::Change>& changes) {
  KnobReport k;
  for (const auto& c : changes) {
    const config::Knob knob = c.knob;  // judged by the key's owner (KeySpec::knob_of)
    if (knob == config::Knob::None) continue;
    k.knobs.push_back(c.key);
    if (knob == config::Knob::Fault) continue;
    k.optimizations.push_back(c.key);
    if (knob == config::Knob::Approximate) k.klass = config::Knob::Approximate;
    if (knob == config::Knob::Workload) k.workload.push_back(c.key);
  }
  if (k.optimizations.size() > 1) {
    std::string list;
    for (const auto& o : k.optimizations) list += (list.empty() ? "" : ", ") + o;
    k.warnings.push_back("one optimization at a time: this variant changes " +
                         std::to_string(k.optimizations.size()) + " things (" + list +
                         "); if it fails, `lockstep bisect` names the culprit");
  }
  if (!k.workload.empty()) {
    std::string list;
    for (const auto& o : k.workload) list += (list.empty() ? "" : ", ") + o;
    k.warnings.push_back("workload change: the variant changes the workload itself (" + list +
                         "), so its loss is not compared with the baseline's (alignment not "
                         "applicable); both arms are timed and the verdict rests on the timing "
                         "checks only");
  }
  return k;
}

namespace {

// check_alignment's rules, each on an Alignment whose losses at the check step and whole-curve
// statistic are filled in; each returns the explanation.

// Approximate knob with the noise envelope: |delta| at the check step within factor x the
// envelope there, and the mean |delta| over the window within factor x the envelope's mean.
std::string judge_by_envelope(Alignment& a, const std::vector<double>& b, int64_t n,
                              const EnvelopeInput& in) {
  char buf[512];
  a.rule = Rule::Envelope;
  Envelope e;
  e.runs = in.values.empty() ? static_cast<int64_t>(in.curves.size())
                             : static_cast<int64_t>(in.noise_seeds.size());
  e.noise_seeds = in.noise_seeds;
  e.factor = in.factor;
  e.noise = in.noise;
  e.noise_source = in.noise_source;
  e.noise_dtype = in.noise_dtype;
  e.window = in.window > 0 ? in.window : envelope_window(n);
  e.values = in.values.empty() ? noise_envelope(b, in.curves, e.window) : in.values;
  if (static_cast<int64_t>(e.values.size()) >= a.check_step)
    e.at_check = e.values[static_cast<size_t>(a.check_step - 1)];
  e.bound_at_check = e.factor * e.at_check;
  e.inside = std::isfinite(a.abs_diff) && std::isfinite(e.bound_at_check) &&
             a.abs_diff <= e.bound_at_check;
  const auto ne = static_cast<int64_t>(e.values.size());
  a.curve.judged = true;
  a.curve.bound_rule = "factor x mean envelope";
  a.curve.bound = ne >= n ? e.factor * mean_over(e.values, a.curve.from_step, n) : NAN;
  a.curve.passed = std::isfinite(a.curve.value) && std::isfinite(a.curve.bound) &&
                   a.curve.value <= a.curve.bound;
  a.aligned = e.inside && a.curve.passed;
  if (!std::isfinite(e.bound_at_check) || !std::isfinite(a.curve.bound))
    std::snprintf(buf, sizeof buf,
                  "approximate knob: the noise envelope is unknown (a perturbed baseline run's "
                  "loss is not finite, or it ran fewer steps), so |delta| %.2e at step %lld "
                  "cannot be judged",
                  a.abs_diff, static_cast<long long>(a.check_step));
  else
    std::snprintf(buf, sizeof buf,
                  "approximate knob: |delta| %.2e at step %lld is %s %g x the noise envelope "
                  "%.2e (%lld runs, weight noise %s), and the mean |delta| %.2e over steps "
                  "%lld-%lld is %s %g x its mean %.2e%s",
                  a.abs_diff, static_cast<long long>(a.check_step), e.inside ? "within" : "outside",
                  e.factor, e.at_check, static_cast<long long>(e.runs), e.noise_source.c_str(),
                  a.curve.value, static_cast<long long>(a.curve.from_step),
                  static_cast<long long>(n), a.curve.passed ? "within" : "outside", e.factor,
                  a.curve.bound / e.factor,
                  a.equal_to_3dp ? "; equal to three decimals" : "; not equal to three decimals");
  a.envelope = std::move(e);
  return buf;
}

// Approximate knob without the envelope: |delta| within the baseline's seed-to-seed spread.
std::string judge_by_band(Alignment& a, const BandInput& in) {
  char buf[512];
  a.rule = Rule::SeedBand;
  SeedBand sb;
  sb.seeds = in.seeds;
  sb.losses = in.losses;
  // A non-finite seed loss makes the band unknown (NaN), never silently narrower: std::max
  // would drop the NaN and judge the variant against the remaining seeds only.
  for (size_t i = 1; i < in.losses.size(); ++i) {
    const double spread = std::fabs(in.losses[i] - in.losses[0]);
    sb.half_width = std::isfinite(spread) ? std::max(sb.half_width, spread) : NAN;
    if (std::isnan(sb.half_width)) break;
  }
  sb.lo = in.losses[0] - sb.half_width;
  sb.hi = in.losses[0] + sb.half_width;
  sb.inside = std::isfinite(a.abs_diff) && a.abs_diff <= sb.half_width;
  a.band = sb;
  a.aligned = sb.inside;
  if (std::isnan(sb.half_width))
    std::snprintf(buf, sizeof buf,
                  "approximate knob: the baseline's seed-to-seed spread at step %lld is unknown "
                  "(a seed's loss there is not finite), so |delta| %.2e cannot be judged",
                  static_cast<long long>(a.check_step), a.abs_diff);
  else
    std::snprintf(
        buf, sizeof buf,
        "approximate knob: |delta| %.2e at step %lld is %s the baseline's seed-to-seed spread "
        "%.2e (%zu seeds)%s",
        a.abs_diff, static_cast<long long>(a.check_step), sb.inside ? "within" : "outside",
        sb.half_width, in.losses.size(),
        a.equal_to_3dp ? "; also equal to three decimals" : "; not equal to three decimals");
  return buf;
}

std::string shown_not_judged(Alignment& a) {
  char buf[512];
  a.rule = Rule::None;
  a.aligned = true;
  std::snprintf(buf, sizeof buf,
                "not checked ([gate] alignment = \"none\"): |delta| %.2e at step %lld (%s vs %s)",
                a.abs_diff, static_cast<long long>(a.check_step), a.baseline_rounded.c_str(),
                a.variant_rounded.c_str());
  return buf;
}

// Exact knob: equal to three decimals at the check step and over the window.
std::string judge_by_tolerance(Alignment& a, double tol, int64_t n) {
  char buf[512];
  a.rule = Rule::Tolerance;
  a.curve.judged = true;
  a.curve.bound_rule = "tolerance";
  a.curve.bound = tol;
  a.curve.passed = std::isfinite(a.curve.value) && a.curve.value < tol;
  a.aligned = a.equal_to_3dp && a.curve.passed;
  std::snprintf(
      buf, sizeof buf,
      "exact knob: |delta| %.2e at step %lld %s the tolerance %.0e (%s vs %s); the mean |delta| "
      "%.2e over steps %lld-%lld %s",
      a.abs_diff, static_cast<long long>(a.check_step), a.equal_to_3dp ? "is below" : "exceeds",
      tol, a.baseline_rounded.c_str(), a.variant_rounded.c_str(), a.curve.value,
      static_cast<long long>(a.curve.from_step), static_cast<long long>(n),
      a.curve.passed ? "is below it too" : "exceeds it: the curve drifts");
  return buf;
}

}  // namespace

Alignment check_alignment(const std::vector<double>& b, const std::vector<double>& v,
                          int64_t check_step, double tol, config::Knob klass,
                          const std::optional<BandInput>& band,
                          const std::optional<EnvelopeInput>& envelope, double curve_window_pct) {
  Alignment a;
  a.klass = klass;
  a.tolerance = tol;
  const int64_t n = static_cast<int64_t>(std::min(b.size(), v.size()));
  a.check_step = check_step > 0 ? std::min(check_step, n) : n;
  if (n == 0 || a.check_step < 1) {
    a.aligned = false;
    a.explanation = "no common steps to compare";
    return a;
  }
  a.baseline_loss = b[static_cast<size_t>(a.check_step - 1)];
  a.variant_loss = v[static_cast<size_t>(a.check_step - 1)];
  a.abs_diff = std::fabs(a.baseline_loss - a.variant_loss);
  a.baseline_rounded = round3(a.baseline_loss);
  a.variant_rounded = round3(a.variant_loss);
  a.equal_to_3dp = std::isfinite(a.abs_diff) && a.abs_diff < tol;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(b[static_cast<size_t>(i)] - v[static_cast<size_t>(i)]);
    if (!std::isfinite(d) || d > a.max_abs_diff) a.max_abs_diff = std::isfinite(d) ? d : INFINITY;
    if ((!std::isfinite(d) || d >= tol) && a.first_divergent_step == 0)
      a.first_divergent_step = i + 1;
  }
  // The whole-curve statistic, reported for every class; judged by the envelope and tolerance rules.
  a.curve.from_step = curve_window_start(n, curve_window_pct);
  a.curve.to_step = n;
  a.curve.value = mean_abs_diff(b, v, a.curve.from_step, n);
  if (klass == config::Knob::Approximate && envelope &&
      (!envelope->curves.empty() || !envelope->values.empty()))
    a.explanation = judge_by_envelope(a, b, n, *envelope);
  else if (klass == config::Knob::Approximate && band && band->losses.size() >= 2)
    a.explanation = judge_by_band(a, *band);
  else if (klass ==
           config::Knob::None)  // declared by the variant ([gate] alignment): shown, not judged
    a.explanation = shown_not_judged(a);
  else
    a.explanation = judge_by_tolerance(a, tol, n);
  return a;
}

std::string first_nondeterminism(const std::vector<double>& ref,
                                 const std::vector<std::vector<double>>& repeats) {
  for (size_t r = 0; r < repeats.size(); ++r) {
    const auto& c = repeats[r];
    if (c.size() > ref.size())
      return "repeat " + std::to_string(r + 1) + " ran more steps than the reference";
    for (size_t i = 0; i < c.size(); ++i) {
      // Bitwise: NaN == NaN counts as equal only when both are NaN at the same step.
      const bool same = c[i] == ref[i] || (std::isnan(c[i]) && std::isnan(ref[i]));
      if (!same) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "repeat %zu differs from the full run at step %zu (%.9g vs %.9g)", r + 1,
                      i + 1, c[i], ref[i]);
        return buf;
      }
    }
  }
  return "";
}

namespace {

Delta finish(double point, stats::Interval ci, double p, const gate::Policy& pol, const char* up,
             const char* down) {
  Delta d;
  d.point = point;
  d.ci_lo = ci.lo;
  d.ci_hi = ci.hi;
  d.p_value = p;
  d.known = std::isfinite(point);
  d.significant =
      d.known && ci.valid() && std::isfinite(p) && p < pol.check_level() && (ci.lo > 0 || ci.hi < 0);
  d.wording = !d.known        ? "unknown"
              : d.significant ? (point > 0 ? up : down)
                              : "no significant change";
  return d;
}

}  // namespace

Delta throughput_delta(const std::vector<double>& b, const std::vector<double>& v,
                       const gate::Policy& p) {
  const double point = 100.0 * (stats::median(v) / stats::median(b) - 1.0);
  auto ci = stats::bootstrap_ci(
      b, v, stats::pct_change([](const std::vector<double>& x) { return stats::median(x); }),
      static_cast<int>(p.bootstrap), 1 - p.check_level(), 0x5eed);
  return finish(point, ci, stats::mann_whitney_u(b, v).p_two_sided, p, "faster", "slower");
}

std::vector<double> log_ratios(const std::vector<double>& b, const std::vector<double>& v) {
  std::vector<double> d;
  for (size_t i = 0; i < std::min(b.size(), v.size()); ++i) d.push_back(std::log(v[i] / b[i]));
  return d;
}

Delta paired_throughput_delta(const std::vector<double>& b, const std::vector<double>& v,
                              const gate::Policy& p) {
  const stats::PairedT t = stats::paired_t(log_ratios(b, v), 1 - p.check_level());
  auto pct = [](double x) { return 100.0 * std::expm1(x); };
  return finish(pct(t.mean), stats::Interval{pct(t.ci.lo), pct(t.ci.hi)}, t.p_two_sided, p,
                "faster", "slower");
}

Delta latency_delta(const std::vector<std::vector<double>>& b,
                    const std::vector<std::vector<double>>& v, double q, const gate::Policy& p) {
  auto pool = [](const std::vector<std::vector<double>>& g) {
    std::vector<double> all;
    for (const auto& x : g) all.insert(all.end(), x.begin(), x.end());
    return all;
  };
  auto pq = [q](const std::vector<double>& x) { return x.empty() ? NAN : stats::percentile(x, q); };
  const double point = 100.0 * (pq(pool(v)) / pq(pool(b)) - 1.0);
  auto ci = stats::bootstrap_ci_grouped(b, v, stats::pct_change(pq), static_cast<int>(p.bootstrap),
                                        1 - p.check_level(), 0x5eed + 1);
  std::vector<double> rb, rv;  // per-repeat percentiles for the rank test
  for (const auto& x : b) rb.push_back(pq(x));
  for (const auto& x : v) rv.push_back(pq(x));
  return finish(point, ci, stats::mann_whitney_u(rb, rv).p_two_sided, p, "higher", "lower");
}

Delta mfu_delta(const std::vector<double>& b, const std::vector<double>& v, const gate::Policy& p) {
  if (b.empty() || v.empty()) {
    Delta d;
    d.known = false;
    d.wording = "unknown";  // no peak FLOP/s for this device: the arms' MFU says so
    return d;
  }
  const double point = 100.0 * (stats::median(v) - stats::median(b));
  auto ci = stats::bootstrap_ci(
      b, v,
      [](const std::vector<double>& x, const std::vector<double>& y) {
        return 100.0 * (stats::median(y) - stats::median(x));
      },
      static_cast<int>(p.bootstrap), 1 - p.check_level(), 0x5eed + 2);
  return finish(point, ci, stats::mann_whitney_u(b, v).p_two_sided, p, "higher", "lower");
}

TailStatistic tail_statistic(int64_t nb, int64_t nv, int64_t min_samples) {
  TailStatistic t;
  t.n_baseline = nb;
  t.n_variant = nv;
  if (std::min(nb, nv) >= min_samples) return t;  // q 99, "P99"
  t.q = 100;
  t.label = "max of " + t.n_per_arm() + " steps";
  return t;
}

Power timing_power(const ArmResult& b, const ArmResult& v, double tail_q, double level,
                   bool paired) {
  Power pw;
  pw.level = level;
  const size_t nb = b.step_ms_repeats.size(), nv = v.step_ms_repeats.size();
  if (b.tokens_per_sec_repeats.size() < 2 || v.tokens_per_sec_repeats.size() < 2) return pw;
  pw.known = true;
  auto mde = [&](const std::vector<double>& x, const std::vector<double>& y) {
    return stats::min_detectable_effect(stats::pooled_cv_pct(x, y), x.size(), y.size(), level,
                                        pw.power);
  };
  // Matched pairs: the noise is the spread of the pairs' log ratios, not of either arm.
  auto paired_mde = [&](const std::vector<double>& x, const std::vector<double>& y) {
    const std::vector<double> d = log_ratios(x, y);
    if (!stats::all_finite(d)) return static_cast<double>(NAN);
    return 100.0 * std::expm1(stats::paired_min_detectable_effect(stats::stddev(d), d.size(),
                                                                  level, pw.power));
  };
  const auto& tb = b.tokens_per_sec_repeats;
  const auto& tv = v.tokens_per_sec_repeats;
  pw.tokens_per_sec_mde_pct = paired ? paired_mde(tb, tv) : mde(tb, tv);
  if (nb < 2 || nv < 2) return pw;
  auto per_repeat = [](const ArmResult& a, double q) {
    std::vector<double> out;
    for (const auto& x : a.step_ms_repeats) out.push_back(x.empty() ? NAN : stats::percentile(x, q));
    return out;
  };
  pw.p50_mde_pct = paired ? paired_mde(per_repeat(b, 50), per_repeat(v, 50))
                          : mde(per_repeat(b, 50), per_repeat(v, 50));
  pw.p99_mde_pct = mde(per_repeat(b, tail_q), per_repeat(v, tail_q));
  return pw;
}

CommonPeak common_peak(const ArmResult& b, const ArmResult& v) {
  CommonPeak c;
  const auto& pb = b.alignment_run.peak_flops;
  const auto& pv = v.alignment_run.peak_flops;
  if (!pb || !pv || !(*pb > 0) || !(*pv > 0)) return c;
  const bool variant_larger = *pv > *pb;
  c.flops = variant_larger ? *pv : *pb;
  c.arm = variant_larger ? "variant" : "baseline";
  c.source = (variant_larger ? v : b).alignment_run.peak_flops_source;
  return c;
}

int timing_family_size(const gate::Policy& p) {
  return p.min_speedup_pct ? 3 : 2;
}

void median_with_ci(const std::vector<double>& x, const gate::Policy& p, double* median, double* lo,
                    double* hi) {
  *median = stats::median(x);
  auto ci = stats::bootstrap_ci(
      x, x,
      [](const std::vector<double>& a, const std::vector<double>&) { return stats::median(a); },
      static_cast<int>(p.bootstrap), 1 - p.check_level(), 0x5eed + 3);
  *lo = ci.lo;
  *hi = ci.hi;
}

void aggregate_profile(ArmResult& arm) {
  std::map<std::string, std::vector<double>> ms;
  std::map<std::string, OpStat> ops;
  for (const auto& rep : arm.repeats) {
    for (const auto& [p, v] : rep.phase_ms_mean) ms[p].push_back(v);
    for (const auto& o : rep.top_ops) {
      auto& acc = ops[o.name];
      acc.name = o.name;
      acc.calls += o.calls;
      acc.self_ms += o.self_ms;
      acc.total_ms += o.total_ms;
    }
  }
  double total = 0;
  for (const auto& [p, v] : ms) total += (arm.phase_ms[p] = stats::median(v));
  for (const auto& [p, v] : arm.phase_ms) arm.phase_share[p] = total > 0 ? v / total : 0;
  arm.bound = arm.phase_ms.empty() ? "unknown" : classify_bound(arm.phase_share);
  const double n = arm.repeats.empty() ? 1.0 : static_cast<double>(arm.repeats.size());
  arm.top_ops.clear();
  for (auto& [name, o] : ops)
    arm.top_ops.push_back(OpStat{name, o.calls / n, o.self_ms / n, o.total_ms / n});
  std::sort(arm.top_ops.begin(), arm.top_ops.end(),
            [](const OpStat& a, const OpStat& b) { return a.self_ms > b.self_ms; });
}

Breakdown compare_breakdown(const ArmResult& b, const ArmResult& v) {
  Breakdown out;
  auto get = [](const std::map<std::string, double>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  };
  char buf[256];
  for (const auto& p : phase_names()) {
    PhaseRow row{p, get(b.phase_share, p), get(v.phase_share, p), get(b.phase_ms, p),
                 get(v.phase_ms, p)};
    out.phases.push_back(row);
    if (std::fabs(row.variant_share - row.baseline_share) >= 0.02) {
      std::snprintf(buf, sizeof buf, "%s went from %.0f%% to %.0f%% of the step (%.2f -> %.2f ms)",
                    p.c_str(), 100 * row.baseline_share, 100 * row.variant_share, row.baseline_ms,
                    row.variant_ms);
      out.findings.push_back(buf);
    }
  }
  if (!b.bound.empty() && b.bound != v.bound)
    out.findings.push_back("the bottleneck moved: baseline " + b.bound + ", variant " + v.bound);
  std::map<std::string, OpRow> rows;
  for (const auto& o : b.top_ops)
    rows[o.name].name = o.name, rows[o.name].baseline_ms = o.self_ms,
    rows[o.name].baseline_calls = o.calls;
  for (const auto& o : v.top_ops)
    rows[o.name].name = o.name, rows[o.name].variant_ms = o.self_ms,
    rows[o.name].variant_calls = o.calls;
  for (auto& [n, r] : rows) out.ops.push_back(r);
  std::sort(out.ops.begin(), out.ops.end(), [](const OpRow& x, const OpRow& y) {
    return std::fabs(x.variant_ms - x.baseline_ms) > std::fabs(y.variant_ms - y.baseline_ms);
  });
  if (out.ops.size() > 15) out.ops.resize(15);
  // Attention as one number: both kernels run under the "lockstep::attention" scope.
  auto total_of = [](const std::vector<OpStat>& ops, const std::string& name) {
    for (const auto& o : ops)
      if (o.name == name) return o.total_ms;
    return -1.0;
  };
  const double ab = total_of(b.top_ops, "lockstep::attention"),
               av = total_of(v.top_ops, "lockstep::attention");
  if (ab > 0 && av > 0) {
    std::snprintf(buf, sizeof buf,
                  "attention forward (lockstep::attention scope, incl. the operators it calls): "
                  "%.2f -> %.2f ms/step (%+.0f%%)",
                  ab, av, 100.0 * (av / ab - 1.0));
    out.findings.push_back(buf);
  }
  for (size_t i = 0; i < out.ops.size() && i < 3; ++i) {
    const auto& r = out.ops[i];
    if (std::fabs(r.variant_ms - r.baseline_ms) < 0.05) break;
    std::snprintf(buf, sizeof buf, "%s: %.2f -> %.2f ms/step self time", r.name.c_str(),
                  r.baseline_ms, r.variant_ms);
    out.findings.push_back(buf);
  }
  return out;
}

}  // namespace lockstep::compare
