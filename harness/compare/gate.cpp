#include "harness/compare/gate.h"

#include <cmath>
#include <cstdio>

#include "harness/exit_codes.h"
#include "harness/util/format.h"

namespace lockstep::gate {
namespace {

// A policy bound as written: 5, 2.5, 1000, 1e+05 (no truncated "1000." or "0.000").
std::string bound(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string fmt_delta(const compare::Delta& d, const char* unit) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%+.2f%s [%+.2f, %+.2f] (95%% CI), p = %.3g: %s", d.point, unit,
                d.ci_lo, d.ci_hi, d.p_value, d.wording.c_str());
  return buf;
}

}  // namespace

void apply(compare::CompareResult& r) {
  using compare::Check;
  const Policy& p = r.policy;
  r.checks.clear();
  const std::string inconclusive =
      r.too_few_repeats ? " (inconclusive: only " + util::count_of(r.repeats, "repeat") + " per arm)"
                        : "";

  const bool runs_ok = r.baseline.status == "ok" && r.variant.status == "ok";
  {
    Check c{"runs completed", runs_ok, "both arms ran to the end"};
    if (!runs_ok) c.detail = r.failed_arm + " failed: " + r.failure;
    r.checks.push_back(c);
  }
  if (r.determinism.checked) {
    r.checks.push_back(Check{"baseline deterministic", r.determinism.baseline_ok,
                             r.determinism.baseline_ok
                                 ? "repeats reproduce the full run bit for bit"
                                 : "not trustworthy: " + r.determinism.detail});
    r.checks.push_back(Check{"variant deterministic", r.determinism.variant_ok,
                             r.determinism.variant_ok ? "repeats reproduce the full run bit for bit"
                                                      : r.determinism.detail});
  }
  if (runs_ok)
    r.checks.push_back(Check{"loss alignment", r.alignment.aligned, r.alignment.explanation});

  // Only a comparison whose timing repeats ran has speed to judge: an untimed one (golden mode,
  // a loss that does not align, a failed arm) shows no timing checks rather than made-up zeros.
  const bool timed = r.mode == "ab" && runs_ok && r.timed;
  if (timed) {
    const auto& t = r.delta.tokens_per_sec_pct;
    const bool slow = t.significant && t.ci_hi < -p.max_slowdown_pct;
    r.checks.push_back(Check{"throughput", !slow,
                             "tokens/s " + fmt_delta(t, "%") +
                                 (slow ? "; slower than the allowed " : "; allowed slowdown ") +
                                 bound(p.max_slowdown_pct) + "%" +
                                 inconclusive});
    const auto& l = r.delta.p99_ms_pct;
    const bool worse = l.significant && l.ci_lo > p.max_p99_regression_pct;
    r.checks.push_back(
        Check{"p99 latency", !worse,
              "P99 step time " + fmt_delta(l, "%") +
                  (worse ? "; regression beyond the allowed " : "; allowed regression ") +
                  bound(p.max_p99_regression_pct) + "%" + inconclusive});
    if (p.min_speedup_pct) {
      const bool ok = t.significant && t.point > 0 && t.point >= *p.min_speedup_pct;
      r.checks.push_back(Check{"min speedup", ok,
                               "required a significant speed-up of at least " +
                                   bound(*p.min_speedup_pct) +
                                   "%; measured " + fmt_delta(t, "%")});
    }
  }
  // A memory saving is a property of two arms: golden mode has one (its reference is a curve).
  if (p.min_memory_saving_pct && runs_ok && r.mode == "ab") {
    const bool known = r.delta.memory_pct.has_value();
    const double saving = known ? -*r.delta.memory_pct : NAN;
    char buf[200];
    std::snprintf(buf, sizeof buf, "peak memory per rank %s by %.1f%% (required saving: %.1f%%)",
                  saving >= 0 ? "fell" : "rose", std::fabs(saving), *p.min_memory_saving_pct);
    r.checks.push_back(Check{"memory saving", known && saving >= *p.min_memory_saving_pct,
                             known ? buf : "peak memory unknown"});
  }
  {
    std::vector<double> vals{r.alignment.baseline_loss, r.alignment.variant_loss};
    if (timed) {
      for (const auto* arm : {&r.baseline, &r.variant}) {
        vals.push_back(arm->tokens_per_sec);
        vals.push_back(arm->step_ms.p99);
      }
    }
    bool finite = runs_ok;
    for (double v : vals) finite = finite && std::isfinite(v);
    r.checks.push_back(
        Check{"finite values", finite,
              finite ? "every reported value is finite" : "a reported value is NaN or infinite"});
  }

  bool all = true;
  for (const auto& c : r.checks) all = all && c.passed;
  r.verdict = all ? "pass" : "fail";
  // An arm that stopped on its config (e.g. fp16 on a CPU) is the user's input, not a crash.
  const bool config_error =
      r.baseline.status == "config error" || r.variant.status == "config error";
  r.exit_code = config_error ? kExitUsage
                : !runs_ok   ? kExitRunFailed
                : all        ? kExitPass
                             : kExitGateFailed;
}

}  // namespace lockstep::gate
