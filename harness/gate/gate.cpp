#include "harness/gate/gate.h"

#include <cmath>
#include <cstdio>

#include "harness/stats/statistics.h"
#include "harness/util/exit_codes.h"
#include "harness/util/format.h"

namespace lockstep::gate {
namespace {

using compare::Check;
using compare::CheckKind;
using compare::CompareResult;
using compare::Delta;
using compare::Verdict;

// A policy bound as written: 5, 2.5, 1000, 1e+05 (no truncated "1000." or "0.000").
std::string bound(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string fmt_delta(const compare::Delta& d, const char* unit, double p_adjusted,
                      const Policy& p) {
  char buf[260];
  std::snprintf(buf, sizeof buf,
                "%+.2f%s [%+.2f, %+.2f] (%s CI), p = %.3g (Holm-adjusted %.3g): %s", d.point, unit, d.ci_lo, d.ci_hi, p.ci_percent().c_str(), d.p_value, p_adjusted,
                d.wording.c_str());
  return buf;
}

bool ci_valid(const compare::Delta& d) {
  return d.known && std::isfinite(d.ci_lo) && std::isfinite(d.ci_hi) && d.ci_lo <= d.ci_hi;
}

// Why a timing check has its verdict. clear: the whole CI lies on one side of the bound, so what
// kept the verdict from pass or fail was significance (Holm-adjusted).
std::string verdict_phrase(compare::Verdict verdict, bool clear, bool too_few,
                           OnInconclusive on_inconclusive) {
  if (verdict == compare::Verdict::Pass) return "pass: the whole CI is on the allowed side";
  if (verdict == compare::Verdict::Fail) return "fail: the whole CI is beyond the bound";
  const std::string why = too_few ? "too few repeats to pass"
                          : clear ? "the CI clears the bound, but the change is not "
                                    "significant after Holm"
                                   : "the CI straddles the bound";
  return "inconclusive: " + why + " ([gate] on_inconclusive = \"" + to_string(on_inconclusive) +
         "\")";
}

// Which arm failed, for the "runs completed" detail ("" when none is named).
std::string failed_arm_text(const compare::CompareResult& r) {
  return r.failed_arm ? compare::to_string(*r.failed_arm) : "";
}

std::string mde_phrase(double mde, const compare::Power& pw) {
  if (!std::isfinite(mde)) return "minimum detectable effect unknown";
  char buf[160];
  std::snprintf(buf, sizeof buf, "minimum detectable effect %.2f%% (power %.1f, level %.3g)", mde,
                pw.power, pw.level);
  return buf;
}

// ---- one function per check family, in the gate's order ---------------------------------------

// Kernel conformance runs first: a kernel that fails it is rejected before any run starts. False
// when it failed (nothing else ran).
bool conformance_check(CompareResult& r) {
  if (!r.conformance && r.conformance_failure.empty()) return true;
  const bool ok = r.conformance && r.conformance->passed() && r.conformance_failure.empty();
  std::string detail;
  if (!r.conformance_failure.empty()) {
    detail = "the check did not run: " + r.conformance_failure;
  } else if (ok) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%zu kernel(s), %zu checks against the exact math, all within c x the built-in's "
                  "error (%.1f s)",
                  r.conformance->kernels.size(), r.conformance->rows.size(),
                  r.conformance->seconds);
    detail = buf;
  } else {
    detail = r.conformance->worst()->verdict_line();
  }
  r.checks.push_back(Check{CheckKind::KernelConformance, ok, detail});
  return ok;
}

void runs_check(CompareResult& r, bool runs_ok) {
  Check c{CheckKind::RunsCompleted, runs_ok,
          r.mode == compare::Mode::Golden
              ? "the variant ran to the end (golden mode: the other side is the "
                "golden file's curve)"
              : "both arms ran to the end"};
  if (!runs_ok) c.detail = failed_arm_text(r) + " failed: " + r.failure;
  r.checks.push_back(c);
}

void determinism_checks(CompareResult& r) {
  if (!r.determinism.checked) return;
  r.checks.push_back(Check{CheckKind::BaselineDeterministic, r.determinism.baseline_ok,
                           r.determinism.baseline_ok ? "repeats reproduce the full run bit for bit"
                                                     : "not trustworthy: " + r.determinism.detail});
  r.checks.push_back(Check{CheckKind::VariantDeterministic, r.determinism.variant_ok,
                           r.determinism.variant_ok ? "repeats reproduce the full run bit for bit"
                                                    : r.determinism.detail});
}

// A workload change has no alignment verdict (harness/compare/workload_change.h).
void alignment_check(CompareResult& r, bool runs_ok) {
  if (runs_ok && r.alignment.applicable)
    r.checks.push_back(
        Check{CheckKind::LossAlignment, r.alignment.aligned, r.alignment.explanation});
}

double p_of(const Delta& d) {
  return d.known ? d.p_value : NAN;
}

// The timing checks: one family, Holm-corrected over throughput, the tail check and min speedup
// (when set), in that order (adj).
struct TimingFamily {
  CompareResult& r;
  const Policy& p;
  std::vector<double> adj;
  std::string inconclusive;  // the too-few-repeats note every timing detail ends with

  bool significant(const Delta& d, double p_adj) const {
    return d.known && ci_valid(d) && p_adj < p.check_level() && (d.ci_lo > 0 || d.ci_hi < 0);
  }
  void add(CheckKind kind, const Delta& d, double p_adj, double mde, bool fail, bool pass,
           bool clear, const std::string& detail) {
    // A pass needs a CI worth the name: from 2-4 repeats the bootstrap's is not (too_few).
    const bool too_few = pass && !fail && r.too_few_repeats;
    const Verdict verdict = fail               ? Verdict::Fail
                            : pass && !too_few ? Verdict::Pass
                                               : Verdict::Inconclusive;
    Check c{
        kind,
        verdict == Verdict::Pass || (verdict == Verdict::Inconclusive && p.inconclusive_passes()),
        detail + "; " + verdict_phrase(verdict, clear, too_few, p.on_inconclusive) + "; " +
            mde_phrase(mde, r.power) + inconclusive,
        verdict};
    c.timing = true;
    c.p_value = p_of(d);
    c.p_adjusted = p_adj;
    c.mde_pct = mde;
    r.checks.push_back(c);
  }
};

// Throughput: the CI's upper end beyond the allowed slowdown, significantly, fails; its lower
// end within the allowance passes; else it straddles the bound.
void throughput_check(TimingFamily& f) {
  const Delta& t = f.r.delta.tokens_per_sec_pct;
  const Policy& p = f.p;
  const double bound_pct = -p.max_slowdown_pct;
  const bool fail = f.significant(t, f.adj[0]) && t.ci_hi < bound_pct;
  const bool pass = ci_valid(t) && t.ci_lo >= bound_pct;
  f.add(CheckKind::Throughput, t, f.adj[0], f.r.power.tokens_per_sec_mde_pct, fail, pass,
        ci_valid(t) && t.ci_hi < bound_pct,
        "tokens/s " + fmt_delta(t, "%", f.adj[0], p) +
            (fail ? "; slower than the allowed " : "; allowed slowdown ") +
            bound(p.max_slowdown_pct) + "%");
}

// The tail check: the P99 step time (or the maximum, with too few steps for a P99).
void tail_latency_check(TimingFamily& f) {
  const Delta& l = f.r.delta.p99_ms_pct;
  const Policy& p = f.p;
  const bool fail = f.significant(l, f.adj[1]) && l.ci_lo > p.max_p99_regression_pct;
  const bool pass = ci_valid(l) && l.ci_hi <= p.max_p99_regression_pct;
  const std::string what =
      f.r.tail.is_p99() ? "P99 step time (n=" + f.r.tail.n_per_arm() + " per arm)"
                        : "step time " + f.r.tail.label + " per arm (too few for a P99: it needs " +
                              std::to_string(p.p99_min_samples) + ")";
  f.add(CheckKind::P99Latency, l, f.adj[1], f.r.power.p99_mde_pct, fail, pass,
        ci_valid(l) && l.ci_lo > p.max_p99_regression_pct,
        what + " " + fmt_delta(l, "%", f.adj[1], p) +
            (fail ? "; regression beyond the allowed " : "; allowed regression ") +
            bound(p.max_p99_regression_pct) + "%");
}

// The CI's lower end must reach the required speed-up (a positive one significantly: a speed-up
// is a change); its upper end below it fails; else it straddles the requirement.
void min_speedup_check(TimingFamily& f) {
  if (!f.p.min_speedup_pct) return;
  const Delta& t = f.r.delta.tokens_per_sec_pct;
  const double need = *f.p.min_speedup_pct;
  const bool pass = ci_valid(t) && t.ci_lo >= need && (need <= 0 || f.significant(t, f.adj[2]));
  const bool fail = ci_valid(t) && t.ci_hi < need;
  f.add(CheckKind::MinSpeedup, t, f.adj[2], f.r.power.tokens_per_sec_mde_pct, fail, pass,
        ci_valid(t) && t.ci_lo >= need,
        "required a significant speed-up of at least " + bound(need) +
            "% (the CI's lower bound); measured " + fmt_delta(t, "%", f.adj[2], f.p));
}

void timing_checks(CompareResult& r) {
  const Policy& p = r.policy;
  std::vector<double> family{p_of(r.delta.tokens_per_sec_pct), p_of(r.delta.p99_ms_pct)};
  if (p.min_speedup_pct) family.push_back(p_of(r.delta.tokens_per_sec_pct));
  TimingFamily f{r, p, stats::holm_adjust(family),
                 r.too_few_repeats
                     ? " (inconclusive: only " + util::count_of(r.repeats, "repeat") + " per arm)"
                     : ""};
  throughput_check(f);
  tail_latency_check(f);
  min_speedup_check(f);
}

// A memory saving is a property of two arms: golden mode has one (its reference is a curve).
void memory_check(CompareResult& r, bool runs_ok) {
  const Policy& p = r.policy;
  if (!p.min_memory_saving_pct || !runs_ok || r.mode != compare::Mode::AB) return;
  const bool known = r.delta.memory_pct.has_value();
  const double saving = known ? -*r.delta.memory_pct : NAN;
  char buf[200];
  std::snprintf(buf, sizeof buf, "peak memory per rank %s by %.1f%% (required saving: %.1f%%)",
                saving >= 0 ? "fell" : "rose", std::fabs(saving), *p.min_memory_saving_pct);
  r.checks.push_back(Check{CheckKind::MemorySaving, known && saving >= *p.min_memory_saving_pct,
                           known ? buf : "peak memory unknown"});
}

void finite_check(CompareResult& r, bool runs_ok, bool timed) {
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
      Check{CheckKind::FiniteValues, finite,
            finite ? "every reported value is finite" : "a reported value is NaN or infinite"});
}

// The verdict and the exit code from the checks.
void decide(CompareResult& r, bool runs_ok) {
  bool all = true;
  for (const auto& c : r.checks) all = all && c.passed;
  r.verdict = compare::verdict_from(all);
  // An arm that stopped on its config (e.g. fp16 on a CPU) is the user's input, not a crash.
  const bool config_error = r.baseline.config_error() || r.variant.config_error();
  r.exit_code = config_error ? kExitUsage
                : !runs_ok   ? kExitRunFailed
                : all        ? kExitPass
                             : kExitGateFailed;
}

}  // namespace

void apply(CompareResult& r) {
  r.checks.clear();
  if (!conformance_check(r)) {  // nothing else ran
    r.verdict = Verdict::Fail;
    r.exit_code = kExitGateFailed;
    return;
  }
  const bool runs_ok = r.baseline.ok() && r.variant.ok();
  runs_check(r, runs_ok);
  determinism_checks(r);
  alignment_check(r, runs_ok);
  // Only a comparison whose timing repeats ran has speed to judge: an untimed one (golden mode,
  // a loss that does not align, a failed arm) shows no timing checks rather than made-up zeros.
  const bool timed = r.mode == compare::Mode::AB && runs_ok && r.timed;
  if (timed) timing_checks(r);
  memory_check(r, runs_ok);
  finite_check(r, runs_ok, timed);
  decide(r, runs_ok);
}

}  // namespace lockstep::gate
