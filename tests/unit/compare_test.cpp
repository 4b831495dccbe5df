// The comparison's analysis and the gate, as pure functions: knob classes, alignment (exact and
// seed band), determinism, performance deltas and the checks they turn into.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "harness/compare/analyse.h"
#include "harness/compare/comparison_stats.h"
#include "harness/compare/envelope.h"
#include "harness/gate/gate.h"
#include "harness/compare/plan.h"
#include "harness/compare/probe_check.h"
#include "harness/stats/statistics.h"
#include "harness/compare/swap_hint.h"
#include "harness/util/exit_codes.h"
#include "harness/vocab/gate_policy.h"
#include "reports/reporter.h"

using namespace lockstep;
using namespace lockstep::compare;
using config::Knob;

namespace {

config::Change change(const std::string& key, const std::string& a, const std::string& b, Knob k) {
  return {key, a, b, k};
}

std::vector<double> around(double centre, double spread, int n, int phase = 0) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i)
    v.push_back(centre * (1.0 + spread * std::sin(1.7 * (i + phase) + 0.3)));
  return v;
}

CompareResult healthy_result() {
  CompareResult r;
  r.mode = compare::Mode::AB;
  r.repeats = 5;
  r.timed = true;
  r.alignment.aligned = true;
  r.alignment.baseline_loss = r.alignment.variant_loss = 1.5;
  r.baseline.tokens_per_sec = r.variant.tokens_per_sec = 1000;
  r.baseline.step_ms.p99 = r.variant.step_ms.p99 = 20;
  r.delta.tokens_per_sec_pct = Delta{0.5, -1, 2, 0.6, false, true, "no significant change"};
  r.delta.p99_ms_pct = Delta{0.5, -1, 2, 0.6, false, true, "no significant change"};
  return r;
}

const Check* find(const CompareResult& r, const std::string& name) {
  for (const auto& c : r.checks)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

TEST(Knobs, ClassesWarningsAndBookkeeping) {
  auto k = classify_changes({change("run.name", "\"a\"", "\"b\"", Knob::None),
                             change("attention.impl", "\"math\"", "\"fused\"", Knob::Exact)});
  EXPECT_EQ(k.knobs, std::vector<std::string>{"attention.impl"});
  EXPECT_STREQ(config::knob_class_name(k.klass), "exact");
  EXPECT_TRUE(k.warnings.empty());
  auto bf16 = classify_changes(
      {change("precision.compute", "\"fp32\"", "\"bf16\"", Knob::Approximate)});
  EXPECT_STREQ(config::knob_class_name(bf16.klass), "approximate");
  auto two = classify_changes({change("attention.impl", "\"math\"", "\"fused\"", Knob::Exact),
                               change("precision.compute", "\"fp32\"", "\"bf16\"",
                                      Knob::Approximate),
                               change("faults.stall_every", "0", "10", Knob::Fault)});
  EXPECT_EQ(two.knobs.size(), 3u);
  EXPECT_EQ(two.optimizations.size(), 2u);  // a fault is a knob, not an optimization
  ASSERT_EQ(two.warnings.size(), 1u);
  EXPECT_NE(two.warnings[0].find("one optimization at a time"), std::string::npos);
  auto lr = classify_changes({change("optim.lr", "0.003", "0.004", Knob::Workload)});
  ASSERT_EQ(lr.warnings.size(), 1u);
  EXPECT_NE(lr.warnings[0].find("changes the workload itself (optim.lr)"), std::string::npos);
}

// The precision's knob class comes from its traits, on the variant's device: TF32 is a no-op on
// a CPU (exact) but changes rounding on CUDA (approximate); bf16 is approximate everywhere.
TEST(Knobs, PrecisionChangesAreJudgedByTheTraitsOnTheDevice) {
  auto knob_of = [](const std::string& device, const std::string& to) {
    const std::string run = "[run]\ndevice = \"" + device + "\"\n";
    auto a = config::Config::parse(run, "a.toml");
    auto b = config::Config::parse(run + "[precision]\ncompute = \"" + to + "\"\n", "b.toml");
    std::vector<config::Change> changes;
    for (const auto& c : config::diff(a, b))  // (run.name differs too: it comes from the file)
      if (c.key == "precision.compute") changes.push_back(c);
    EXPECT_EQ(changes.size(), 1u);
    return classify_changes(changes).klass;
  };
  EXPECT_STREQ(config::knob_class_name(knob_of("cpu", "tf32")), "exact");
  EXPECT_STREQ(config::knob_class_name(knob_of("cuda", "tf32")), "approximate");
  EXPECT_STREQ(config::knob_class_name(knob_of("cpu", "bf16")), "approximate");
  EXPECT_STREQ(config::knob_class_name(knob_of("cuda", "fp16")), "approximate");
}

// attention.impl is judged by the classes its registry entries declare, and under the configs'
// precision: in fp32 the built-in kernels agree to rounding (exact); under bf16/fp16 a fused
// kernel rounds its blocks differently from the math path's bf16 scores (approximate), which is
// what configs/variants/bf16_fused_attention.toml over bf16.toml is judged as.
TEST(Knobs, AttentionChangesUnderAutocastAreApproximate) {
  auto klass = [](const std::string& compute) {
    const std::string base = "[precision]\ncompute = \"" + compute + "\"\n";
    auto a = config::Config::parse(base, "a.toml");
    auto b = config::Config::parse(base + "[attention]\nimpl = \"fused\"\n", "b.toml");
    std::vector<config::Change> changes;
    for (const auto& c : config::diff(a, b))  // (run.name differs too: it comes from the file)
      if (c.key == "attention.impl") changes.push_back(c);
    EXPECT_EQ(changes.size(), 1u);
    return classify_changes(changes).klass;
  };
  EXPECT_STREQ(config::knob_class_name(klass("fp32")), "exact");
  EXPECT_STREQ(config::knob_class_name(klass("tf32")), "exact");
  EXPECT_STREQ(config::knob_class_name(klass("bf16")), "approximate");
  EXPECT_STREQ(config::knob_class_name(klass("fp16")), "approximate");
  // Either side under autocast is enough (the precision change is a knob of its own then).
  auto a = config::Config::parse("[precision]\ncompute = \"bf16\"\n", "a.toml");
  auto b = config::Config::parse("[attention]\nimpl = \"fused\"\n", "b.toml");
  for (const auto& c : config::diff(a, b)) {
    if (c.key == "attention.impl") {
      EXPECT_EQ(c.knob, Knob::Approximate);
    }
  }
}

TEST(Alignment, ExactToleranceDivergenceAndCheckStep) {
  std::vector<double> b{3.0, 2.0, 1.5, 1.4}, v{3.0, 2.0002, 1.5006, 1.4001};
  auto a = check_alignment(b, v, 0, 5e-4, config::Knob::Exact, std::nullopt);
  EXPECT_EQ(a.check_step, 4);
  EXPECT_TRUE(a.aligned);
  EXPECT_NEAR(a.abs_diff, 1e-4, 1e-12);
  EXPECT_EQ(a.first_divergent_step, 3);  // the curve strayed at step 3, even though step 4 agrees
  EXPECT_NEAR(a.max_abs_diff, 6e-4, 1e-12);
  EXPECT_EQ(a.baseline_rounded, "1.400");
  EXPECT_TRUE(a.equal_to_3dp);
  auto at3 = check_alignment(b, v, 3, 5e-4, config::Knob::Exact, std::nullopt);
  EXPECT_FALSE(at3.aligned);
  EXPECT_EQ(at3.check_step, 3);
  auto clamped = check_alignment(b, v, 99, 5e-4, config::Knob::Exact, std::nullopt);
  EXPECT_EQ(clamped.check_step, 4);
  auto nan = check_alignment(b, {3.0, 2.0, 1.5, NAN}, 0, 5e-4, config::Knob::Exact, std::nullopt);
  EXPECT_FALSE(nan.aligned);
  EXPECT_EQ(nan.first_divergent_step, 4);
  EXPECT_FALSE(check_alignment({}, {}, 0, 5e-4, config::Knob::Exact, std::nullopt).aligned);
}

TEST(Alignment, ApproximateKnobsAreJudgedAgainstTheSeedBand) {
  std::vector<double> b{2.0, 1.50}, v{2.0, 1.51};
  BandInput band{{1234, 1235, 1236}, {1.50, 1.53, 1.48}};
  auto a = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, band);
  ASSERT_TRUE(a.band.has_value());
  EXPECT_NEAR(a.band->half_width, 0.03, 1e-12);
  EXPECT_NEAR(a.band->lo, 1.47, 1e-12);
  EXPECT_NEAR(a.band->hi, 1.53, 1e-12);
  EXPECT_TRUE(a.aligned);        // 0.01 inside the 0.03 seed-to-seed spread
  EXPECT_FALSE(a.equal_to_3dp);  // and reported as not equal to three decimals
  auto out = check_alignment(b, {2.0, 1.56}, 0, 5e-4, config::Knob::Approximate, band);
  EXPECT_FALSE(out.aligned);
  EXPECT_NE(out.explanation.find("outside"), std::string::npos);
}

TEST(Alignment, ANonFiniteSeedLossMakesTheBandUnknownNotNarrower) {
  std::vector<double> b{2.0, 1.50}, v{2.0, 1.50001};
  // Without the NaN seed, the band would be 0.03 wide and the variant inside it.
  BandInput band{{1234, 1235, 1236}, {1.50, NAN, 1.53}};
  auto a = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, band);
  ASSERT_TRUE(a.band.has_value());
  EXPECT_TRUE(std::isnan(a.band->half_width));
  EXPECT_FALSE(a.aligned);
  EXPECT_NE(a.explanation.find("spread at step 2 is unknown"), std::string::npos) << a.explanation;
}

// ---- the noise envelope and the curve rule (harness/compare/envelope.h) ------------------------

TEST(Envelope, TrailingMaxOfTheRunsDistanceToTheReference) {
  const std::vector<double> ref{1.0, 1.0, 1.0, 1.0, 1.0};
  const std::vector<std::vector<double>> runs{{1.0, 1.2, 1.0, 1.0, 1.05},
                                              {1.0, 0.9, 1.3, 1.0, 1.0}};
  // raw = max_k |run_k - ref| = 0, 0.2, 0.3, 0, 0.05; window 2: the max of this step and the last.
  const auto e = noise_envelope(ref, runs, 2);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_DOUBLE_EQ(e[0], 0.0);
  EXPECT_NEAR(e[1], 0.2, 1e-12);
  EXPECT_NEAR(e[2], 0.3, 1e-12);
  EXPECT_NEAR(e[3], 0.3, 1e-12);  // the crossing at step 4 does not collapse the envelope
  EXPECT_NEAR(e[4], 0.05, 1e-12);
  // Window 1: the raw distance; shorter curves bound the length.
  const auto raw = noise_envelope(ref, {{1.0, 1.2, 1.0}}, 1);
  EXPECT_EQ(raw.size(), 3u);
  EXPECT_NEAR(raw[1], 0.2, 1e-12);
  EXPECT_TRUE(noise_envelope(ref, {}, 3).empty());
}

TEST(Envelope, ANonFiniteRunMakesTheRestOfTheEnvelopeUnknownNotNarrower) {
  const auto e = noise_envelope({1.0, 1.0, 1.0}, {{1.1, NAN, 1.1}}, 3);
  EXPECT_NEAR(e[0], 0.1, 1e-12);
  EXPECT_TRUE(std::isnan(e[1]));
  EXPECT_TRUE(std::isnan(e[2]));  // even though the run is finite again
}

TEST(Envelope, WindowsAndMeans) {
  EXPECT_EQ(envelope_window(200), 10);
  EXPECT_EQ(envelope_window(10), 1);  // at least one step
  EXPECT_EQ(curve_window_start(200, 20), 161);  // steps 161..200: the last 40
  EXPECT_EQ(curve_window_start(4, 20), 4);      // at least one step
  EXPECT_EQ(curve_window_start(10, 100), 1);
  EXPECT_EQ(curve_window_start(7, 20), 6);      // ceil(1.4) = 2 steps
  EXPECT_NEAR(mean_abs_diff({1, 2, 3}, {1, 2.5, 2}, 2, 3), 0.75, 1e-12);
  EXPECT_TRUE(std::isnan(mean_abs_diff({1, NAN}, {1, 1}, 1, 2)));
  EXPECT_TRUE(std::isnan(mean_abs_diff({1, 2}, {1, 2}, 2, 3)));  // past the end
  EXPECT_NEAR(mean_over({1, 2, 6}, 2, 3), 4.0, 1e-12);
}

// Ten steps; the perturbed baseline runs drift 0.01 from the baseline from step 2 on.
EnvelopeInput ten_step_envelope() {
  EnvelopeInput e;
  std::vector<double> a(10, 2.0), b(10, 2.0);
  for (size_t i = 1; i < 10; ++i) a[i] += 0.01, b[i] -= 0.01;
  e.curves = {a, b};
  e.noise_seeds = {1, 2};
  e.noise = 0.00390625;
  e.noise_source = "unit roundoff of bf16 (2^-8)";
  e.factor = 2;
  e.window = 1;
  return e;
}

TEST(Alignment, ApproximateKnobsAreJudgedAgainstTheNoiseEnvelope) {
  const std::vector<double> b(10, 2.0);
  std::vector<double> v(10, 2.0);
  for (size_t i = 1; i < 10; ++i) v[i] += (i % 2 ? 0.015 : -0.015);  // inside 2 x 0.01
  auto a = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, std::nullopt, ten_step_envelope(), 20);
  EXPECT_STREQ(to_string(a.rule), "envelope");
  ASSERT_TRUE(a.envelope.has_value());
  EXPECT_EQ(a.envelope->runs, 2);
  EXPECT_NEAR(a.envelope->at_check, 0.01, 1e-12);
  EXPECT_NEAR(a.envelope->bound_at_check, 0.02, 1e-12);
  EXPECT_TRUE(a.envelope->inside);
  EXPECT_TRUE(a.curve.judged);
  EXPECT_EQ(a.curve.from_step, 9);  // the last 20% of 10 steps
  EXPECT_NEAR(a.curve.value, 0.015, 1e-12);
  EXPECT_NEAR(a.curve.bound, 0.02, 1e-12);
  EXPECT_TRUE(a.aligned) << a.explanation;
  EXPECT_FALSE(a.band.has_value());
  EXPECT_NE(a.explanation.find("within 2 x the noise envelope"), std::string::npos)
      << a.explanation;
  // 0.03 at the check step: outside.
  v[9] = 2.03;
  const auto out = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, std::nullopt, ten_step_envelope());
  EXPECT_FALSE(out.envelope->inside);
  EXPECT_FALSE(out.aligned);
}

// A bias that builds up is caught by the curve rule even when the check step agrees.
TEST(Alignment, TheCurveRuleCatchesABiasTheCheckStepMisses) {
  const std::vector<double> b(10, 2.0);
  std::vector<double> v(10, 2.03);
  v[0] = 2.0;
  v[9] = 2.0;  // the check step (10) agrees exactly
  auto a = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, std::nullopt, ten_step_envelope(), 20);
  EXPECT_TRUE(a.envelope->inside);
  EXPECT_NEAR(a.curve.value, 0.015, 1e-12);  // steps 9-10: 0.03 and 0
  EXPECT_TRUE(a.curve.passed);               // 0.015 <= 2 x 0.01
  auto wide = check_alignment(b, v, 0, 5e-4, config::Knob::Approximate, std::nullopt, ten_step_envelope(), 50);
  EXPECT_EQ(wide.curve.from_step, 6);
  EXPECT_NEAR(wide.curve.value, 0.024, 1e-12);  // four of five steps 0.03 off
  EXPECT_FALSE(wide.curve.passed);
  EXPECT_FALSE(wide.aligned);
  EXPECT_NE(wide.explanation.find("over steps 6-10 is outside"), std::string::npos)
      << wide.explanation;
  // The exact rule: the same window's mean against the tolerance.
  auto exact = check_alignment(b, v, 0, 5e-4, config::Knob::Exact, std::nullopt, std::nullopt, 50);
  EXPECT_TRUE(exact.equal_to_3dp);
  EXPECT_STREQ(to_string(exact.rule), "tolerance");
  EXPECT_EQ(exact.curve.bound, 5e-4);
  EXPECT_FALSE(exact.curve.passed);
  EXPECT_FALSE(exact.aligned);
  EXPECT_NE(exact.explanation.find("exceeds it: the curve drifts"), std::string::npos)
      << exact.explanation;
}

TEST(Alignment, AnUnknownEnvelopeFailsTheVariant) {
  auto e = ten_step_envelope();
  e.curves[1][4] = NAN;
  const std::vector<double> b(10, 2.0);
  auto a = check_alignment(b, b, 0, 5e-4, config::Knob::Approximate, std::nullopt, e);
  EXPECT_TRUE(std::isnan(a.envelope->at_check));
  EXPECT_FALSE(a.aligned);  // |delta| 0 cannot be judged against an unknown envelope
  EXPECT_NE(a.explanation.find("the noise envelope is unknown"), std::string::npos)
      << a.explanation;
}

TEST(Determinism, RepeatsMustReproduceThePrefixBitForBit) {
  std::vector<double> ref{3.0, 2.5, 2.25, 2.0};
  EXPECT_EQ(first_nondeterminism(ref, {{3.0, 2.5}, {3.0, 2.5, 2.25}}), "");
  auto msg = first_nondeterminism(ref, {{3.0, 2.5}, {3.0, std::nextafter(2.5, 3.0)}});
  EXPECT_NE(msg.find("repeat 2 differs from the full run at step 2"), std::string::npos) << msg;
  EXPECT_NE(first_nondeterminism(ref, {{3, 2.5, 2.25, 2.0, 1.9}}), "");
}

TEST(PerformanceDelta, WordingFollowsTheStatisticsNotThePointEstimate) {
  gate::Policy p;
  auto slow = throughput_delta(around(1000, 0.01, 5), around(900, 0.01, 5, 2), p);
  EXPECT_NEAR(slow.point, -10.0, 1.5);
  EXPECT_TRUE(slow.significant);
  EXPECT_EQ(slow.wording, "slower");
  EXPECT_LT(slow.ci_hi, 0);
  EXPECT_NEAR(slow.p_value, 2.0 / 252, 1e-12);  // exact Mann-Whitney, complete separation
  // A 2% difference inside 5% noise: the point estimate moves, the verdict does not.
  auto noise = throughput_delta(around(1000, 0.05, 5), around(1020, 0.05, 5, 1), p);
  EXPECT_FALSE(noise.significant);
  EXPECT_EQ(noise.wording, "no significant change");
  // Three repeats per arm can never reach p < 0.05 with the exact test: never "significant".
  auto few = throughput_delta({1000, 1001, 1002}, {800, 801, 802}, p);
  EXPECT_FALSE(few.significant);
}

TEST(PerformanceDelta, TailLatencyResamplesWholeRepeats) {
  gate::Policy p;
  std::vector<std::vector<double>> b, v;
  for (int r = 0; r < 5; ++r) {
    b.push_back(around(20, 0.02, 30, r));
    auto stalled = around(20, 0.02, 30, r);
    for (size_t i = 0; i < stalled.size(); i += 10) stalled[i] += 200;  // one step in ten stalls
    v.push_back(stalled);
  }
  auto d = latency_delta(b, v, 99, p);
  EXPECT_TRUE(d.significant);
  EXPECT_EQ(d.wording, "higher");
  EXPECT_GT(d.point, 500);
  auto same = latency_delta(b, b, 99, p);
  EXPECT_FALSE(same.significant);
  auto unknown = mfu_delta({}, {0.5}, p);
  EXPECT_FALSE(unknown.known);
}

TEST(Gate, VerdictAndExitCodeFromTheChecks) {
  auto ok = healthy_result();
  gate::apply(ok);
  EXPECT_EQ(ok.verdict, compare::Verdict::Pass);
  EXPECT_EQ(ok.exit_code, kExitPass);
  ASSERT_NE(find(ok, "throughput"), nullptr);
  ASSERT_NE(find(ok, "p99 latency"), nullptr);

  auto misaligned = healthy_result();
  misaligned.alignment.aligned = false;
  gate::apply(misaligned);
  EXPECT_EQ(misaligned.exit_code, kExitGateFailed);
  EXPECT_FALSE(find(misaligned, "loss alignment")->passed);

  auto crashed = healthy_result();
  crashed.variant.status = RunStatus::Nonfinite;
  crashed.failed_arm = Arm::Variant;
  crashed.failure = "nonfinite at step 7";
  gate::apply(crashed);
  EXPECT_EQ(crashed.exit_code, kExitRunFailed);
  EXPECT_NE(find(crashed, "runs completed")->detail.find("variant failed: nonfinite at step 7"),
            std::string::npos);
}

TEST(Gate, P99AndSlowdownAllowancesAreJudgedOnTheConfidenceInterval) {
  auto r = healthy_result();
  r.delta.p99_ms_pct = Delta{12, 6, 18, 0.008, true, true, "higher"};
  gate::apply(r);
  EXPECT_FALSE(find(r, "p99 latency")->passed);  // default allowance 0%
  r.policy.max_p99_regression_pct = 10;          // the CI reaches below 10%: not shown to exceed it
  gate::apply(r);
  EXPECT_TRUE(find(r, "p99 latency")->passed);
  r.delta.tokens_per_sec_pct = Delta{-20, -25, -15, 0.008, true, true, "slower"};
  r.policy.max_slowdown_pct = 10;
  gate::apply(r);
  EXPECT_FALSE(find(r, "throughput")->passed);
  r.policy.max_slowdown_pct = 30;
  gate::apply(r);
  EXPECT_TRUE(find(r, "throughput")->passed);
  EXPECT_EQ(r.verdict, compare::Verdict::Pass);
}

TEST(Gate, OptionalSpeedupAndMemoryRules) {
  auto r = healthy_result();
  r.policy.min_speedup_pct = 5;
  // The whole CI below the required 5%: shown not to reach it (a CI reaching 5% would straddle
  // it: inconclusive, Gate.MinSpeedupJudgesTheConfidenceIntervalsLowerBound).
  r.delta.tokens_per_sec_pct = Delta{3, 1, 4.5, 0.008, true, true, "faster"};
  r.policy.min_memory_saving_pct = 10;
  r.delta.memory_pct = -12;
  gate::apply(r);
  EXPECT_FALSE(find(r, "min speedup")->passed);
  EXPECT_EQ(find(r, "min speedup")->verdict, compare::Verdict::Fail);
  EXPECT_TRUE(find(r, "memory saving")->passed);
  r.delta.memory_pct = -8;
  r.delta.tokens_per_sec_pct = Delta{9, 6, 12, 0.008, true, true, "faster"};
  gate::apply(r);
  EXPECT_TRUE(find(r, "min speedup")->passed);
  EXPECT_FALSE(find(r, "memory saving")->passed);
  r.delta.memory_pct.reset();
  gate::apply(r);
  EXPECT_FALSE(find(r, "memory saving")->passed);  // unknown is not a saving
}

TEST(Gate, NonFiniteValuesFailAndTooFewRepeatsAreSaid) {
  auto r = healthy_result();
  r.variant.step_ms.p99 = NAN;
  r.too_few_repeats = true;
  r.repeats = 3;
  gate::apply(r);
  EXPECT_FALSE(find(r, "finite values")->passed);
  EXPECT_NE(find(r, "throughput")->detail.find("inconclusive: only 3 repeats per arm"),
            std::string::npos);
}

TEST(Gate, AnUntimedComparisonHasNoTimingChecks) {
  auto r = healthy_result();
  r.timed = false;  // e.g. the loss did not align, so no repeat ran
  r.alignment.aligned = false;
  gate::apply(r);
  EXPECT_EQ(find(r, "throughput"), nullptr);
  EXPECT_EQ(find(r, "p99 latency"), nullptr);
  EXPECT_EQ(r.exit_code, kExitGateFailed);
}

TEST(Gate, AnArmStoppedByItsConfigIsAUsageErrorNotACrash) {
  auto r = healthy_result();
  r.variant.status = RunStatus::ConfigError;
  r.failed_arm = Arm::Variant;
  r.failure = "config error: fp16 autocast is not supported on cpu";
  gate::apply(r);
  EXPECT_EQ(r.exit_code, kExitUsage);
  r.variant.status = RunStatus::Crashed;
  gate::apply(r);
  EXPECT_EQ(r.exit_code, kExitRunFailed);
}

TEST(Gate, GoldenModeHasNoMemoryRuleAndBoundsPrintAsWritten) {
  auto r = healthy_result();
  r.mode = compare::Mode::Golden;
  r.timed = false;
  r.policy.min_memory_saving_pct = 10;  // e.g. zero3.toml's [gate]: no second arm to compare
  gate::apply(r);
  EXPECT_EQ(find(r, "memory saving"), nullptr);
  EXPECT_EQ(r.exit_code, kExitPass);
  auto t = healthy_result();
  t.policy.max_p99_regression_pct = 1000;
  t.policy.max_slowdown_pct = 2.5;
  gate::apply(t);
  EXPECT_NE(find(t, "p99 latency")->detail.find("allowed regression 1000%"), std::string::npos)
      << find(t, "p99 latency")->detail;
  EXPECT_NE(find(t, "throughput")->detail.find("allowed slowdown 2.5%"), std::string::npos)
      << find(t, "throughput")->detail;
}

TEST(Gate, PolicyComesFromPolicyFileElseTheVariantsGateElseDefaults) {
  const std::filesystem::path root = LOCKSTEP_SOURCE_DIR;
  const std::string zero3 = (root / "configs/variants/zero3.toml").string();
  const std::string base = (root / "configs/baseline.toml").string();
  const std::string lenient = (root / "tests/configs/timing_lenient_policy.toml").string();

  auto own = gate::resolve_policy("", config::Config::load(zero3), zero3);
  EXPECT_EQ(own.source, "[gate] of " + zero3);
  EXPECT_DOUBLE_EQ(own.policy.max_slowdown_pct, 50.0);
  ASSERT_TRUE(own.policy.min_memory_saving_pct.has_value());
  EXPECT_DOUBLE_EQ(*own.policy.min_memory_saving_pct, 15.0);

  auto defaults = gate::resolve_policy("", config::Config::load(base), base);
  EXPECT_EQ(defaults.source, "defaults");
  EXPECT_DOUBLE_EQ(defaults.policy.max_p99_regression_pct, 0.0);
  EXPECT_FALSE(defaults.policy.min_memory_saving_pct.has_value());

  // --policy wins over the variant's own [gate], entirely (no key of zero3's [gate] leaks in).
  auto file = gate::resolve_policy(lenient, config::Config::load(zero3), zero3);
  EXPECT_EQ(file.source, "--policy " + lenient);
  EXPECT_DOUBLE_EQ(file.policy.max_p99_regression_pct, 300.0);
  EXPECT_FALSE(file.policy.min_memory_saving_pct.has_value());
}

TEST(Breakdown, PhaseFindingsAndOperatorMovers) {
  ArmResult b, v;
  RunSummary rb, rv;
  rb.phase_ms_mean = {{"data", 0.1}, {"forward", 5},   {"backward", 10},
                      {"comm", 6},   {"optimizer", 1}, {"other", 0}};
  rv.phase_ms_mean = {{"data", 0.1}, {"forward", 5},   {"backward", 10},
                      {"comm", 1},   {"optimizer", 1}, {"other", 0}};
  rb.top_ops = {{"aten::mm", 27, 10, 10}, {"lockstep::attention", 2, 0.01, 2.0}};
  rv.top_ops = {{"aten::mm", 27, 10.02, 10.02}, {"lockstep::attention", 2, 0.01, 1.0}};
  b.repeats = {rb, rb};
  v.repeats = {rv, rv};
  aggregate_profile(b);
  aggregate_profile(v);
  EXPECT_NEAR(b.phase_share["comm"], 6 / 22.1, 1e-9);
  auto bd = compare_breakdown(b, v);
  bool comm = false, attention = false;
  for (const auto& f : bd.findings) {
    comm = comm || f.find("comm went from 27% to 6% of the step") != std::string::npos;
    attention =
        attention || f.find("attention forward (lockstep::attention scope") != std::string::npos;
  }
  EXPECT_TRUE(comm);
  EXPECT_TRUE(attention);
  ASSERT_FALSE(bd.ops.empty());
  EXPECT_EQ(bd.phases.size(), 6u);
}

// `compare configs/variants/bf16.toml configs/baseline.toml`: the arms typed the other way round.
// The FAIL is right; the report also asks whether they were swapped, and only then.
TEST(SwappedArms, AVariantNamedLikeABaselineThatIsMuchSlowerGetsTheHint) {
  CompareResult r = healthy_result();
  r.baseline.config_path = "configs/variants/bf16.toml";
  r.baseline.name = "bf16";
  r.variant.config_path = "configs/baseline.toml";
  r.variant.name = "baseline";
  r.delta.tokens_per_sec_pct = Delta{-27.4, -30.1, -24.8, 0.0079, true, true, "slower"};
  const std::string hint = swapped_arms_hint(r);
  EXPECT_NE(hint.find("did you swap them?"), std::string::npos) << hint;
  EXPECT_NE(hint.find("27% slower"), std::string::npos) << hint;
  EXPECT_NE(hint.find("configs/baseline.toml"), std::string::npos) << hint;
  // The same arms in the right order: the variant is faster, no hint.
  CompareResult right = r;
  std::swap(right.baseline, right.variant);
  right.delta.tokens_per_sec_pct = Delta{37.7, 33.0, 42.0, 0.0079, true, true, "faster"};
  EXPECT_EQ(swapped_arms_hint(right), "");
  // A small or insignificant slowdown is no reason to doubt the order.
  CompareResult small = r;
  small.delta.tokens_per_sec_pct = Delta{-5, -7, -3, 0.0079, true, true, "slower"};
  EXPECT_EQ(swapped_arms_hint(small), "");
  CompareResult noisy = r;
  noisy.delta.tokens_per_sec_pct = Delta{-27.4, -60, 5, 0.2, false, true, "no significant change"};
  EXPECT_EQ(swapped_arms_hint(noisy), "");
  // Both named like baselines (ddp2 vs a baseline copy), or neither: no hint.
  CompareResult both = r;
  both.baseline.config_path = "configs/baseline_ddp.toml";
  EXPECT_EQ(swapped_arms_hint(both), "");
  CompareResult neither = r;
  neither.variant.config_path = "configs/variants/zero3.toml";
  neither.variant.name = "zero3";
  EXPECT_EQ(swapped_arms_hint(neither), "");
}

// "1 repeats per arm" read as a typo in every report: counts of one are singular.
TEST(Gate, OneRepeatIsSaidInTheSingular) {
  auto r = healthy_result();
  r.too_few_repeats = true;
  r.repeats = 1;
  r.policy.repeats = 1;
  gate::apply(r);
  EXPECT_NE(find(r, "throughput")->detail.find("inconclusive: only 1 repeat per arm"),
            std::string::npos)
      << find(r, "throughput")->detail;
  EXPECT_NE(r.policy.describe().find(", 1 repeat per arm,"), std::string::npos)
      << r.policy.describe();
  EXPECT_EQ(reports::text::timing_summary(r), "1 repeat per arm");
  r.repeats = 5;
  EXPECT_EQ(reports::text::timing_summary(r), "5 repeats per arm");
}

// ---- timing verdicts: pass / fail / inconclusive, Holm, power, the tail statistic -------------

namespace {

// A healthy timed comparison whose tail check passes outright (CI [-1, +2] under a 5% allowance),
// so each test below moves one check.
CompareResult timed_result() {
  auto r = healthy_result();
  r.policy.max_p99_regression_pct = 5;
  r.tail = tail_statistic(1000, 1000, r.policy.p99_min_samples);
  return r;
}

}  // namespace

TEST(GateVerdict, ThroughputPassFailInconclusive) {
  auto r = timed_result();
  r.policy.max_slowdown_pct = 5;
  r.delta.tokens_per_sec_pct = Delta{-1, -3, 1, 0.5, false, true, "no significant change"};
  gate::apply(r);  // the whole CI [-3, +1] within the allowed -5%
  EXPECT_EQ(find(r, "throughput")->verdict, compare::Verdict::Pass);
  EXPECT_EQ(r.exit_code, kExitPass);
  r.delta.tokens_per_sec_pct = Delta{-10, -12, -8, 0.008, true, true, "slower"};
  gate::apply(r);  // the whole CI beyond -5%, significant after Holm (2 x 0.008 < 0.05)
  EXPECT_EQ(find(r, "throughput")->verdict, compare::Verdict::Fail);
  EXPECT_FALSE(find(r, "throughput")->passed);
  EXPECT_EQ(r.exit_code, kExitGateFailed);
  r.delta.tokens_per_sec_pct = Delta{-5, -8, -2, 0.008, true, true, "slower"};
  gate::apply(r);  // [-8, -2] straddles -5: this comparison cannot tell
  const Check* t = find(r, "throughput");
  EXPECT_EQ(t->verdict, compare::Verdict::Inconclusive);
  EXPECT_TRUE(t->passed);  // on_inconclusive = "pass" (the default)
  EXPECT_NE(t->detail.find("inconclusive: the CI straddles the bound"), std::string::npos)
      << t->detail;
  EXPECT_EQ(r.verdict, compare::Verdict::Pass);
  EXPECT_EQ(r.exit_code, kExitPass);
}

TEST(GateVerdict, P99PassFailInconclusive) {
  auto r = timed_result();
  r.policy.max_p99_regression_pct = 10;
  r.delta.p99_ms_pct = Delta{3, 1, 6, 0.03, true, true, "higher"};
  gate::apply(r);  // [+1, +6] under +10
  EXPECT_EQ(find(r, "p99 latency")->verdict, compare::Verdict::Pass);
  r.delta.p99_ms_pct = Delta{20, 14, 26, 0.008, true, true, "higher"};
  gate::apply(r);
  EXPECT_EQ(find(r, "p99 latency")->verdict, compare::Verdict::Fail);
  EXPECT_EQ(r.exit_code, kExitGateFailed);
  r.delta.p99_ms_pct = Delta{9, 4, 15, 0.008, true, true, "higher"};
  gate::apply(r);
  EXPECT_EQ(find(r, "p99 latency")->verdict, compare::Verdict::Inconclusive);
  EXPECT_EQ(r.exit_code, kExitPass);
}

TEST(GateVerdict, MinSpeedupJudgesTheConfidenceIntervalsLowerBound) {
  auto r = timed_result();
  r.policy.min_speedup_pct = 5;
  // Point estimate +9% and the CI's lower bound +6%: a speed-up of at least 5%, significantly.
  r.delta.tokens_per_sec_pct = Delta{9, 6, 12, 0.008, true, true, "faster"};
  gate::apply(r);
  EXPECT_EQ(find(r, "min speedup")->verdict, compare::Verdict::Pass);
  // Point estimate +6% (above 5%), but the CI [+3, +9] reaches below it: not shown.
  r.delta.tokens_per_sec_pct = Delta{6, 3, 9, 0.008, true, true, "faster"};
  gate::apply(r);
  EXPECT_EQ(find(r, "min speedup")->verdict, compare::Verdict::Inconclusive);
  // The whole CI below +5%.
  r.delta.tokens_per_sec_pct = Delta{2, 0.5, 4, 0.03, true, true, "faster"};
  gate::apply(r);
  EXPECT_EQ(find(r, "min speedup")->verdict, compare::Verdict::Fail);
  EXPECT_EQ(r.exit_code, kExitGateFailed);
  // The lower bound reaches +5%, but the speed-up is not significant after Holm: three checks,
  // the smallest p 0.02 -> 0.06.
  r.delta.tokens_per_sec_pct = Delta{9, 6, 12, 0.02, true, true, "faster"};
  gate::apply(r);
  EXPECT_NEAR(find(r, "min speedup")->p_adjusted, 0.06, 1e-12);
  EXPECT_EQ(find(r, "min speedup")->verdict, compare::Verdict::Inconclusive);
}

TEST(GateVerdict, OnInconclusiveFailTurnsAnInconclusiveCheckIntoExit1) {
  auto r = timed_result();
  r.delta.tokens_per_sec_pct = Delta{-5, -8, -2, 0.008, true, true, "slower"};
  r.policy.max_slowdown_pct = 5;
  r.policy.on_inconclusive = gate::OnInconclusive::Fail;
  gate::apply(r);
  EXPECT_EQ(find(r, "throughput")->verdict, compare::Verdict::Inconclusive);
  EXPECT_FALSE(find(r, "throughput")->passed);
  EXPECT_EQ(r.verdict, compare::Verdict::Fail);
  EXPECT_EQ(r.exit_code, kExitGateFailed);
  r.policy.on_inconclusive = gate::OnInconclusive::Pass;
  gate::apply(r);
  EXPECT_EQ(r.exit_code, kExitPass);
  // Non-timing checks are pass or fail only.
  for (const auto& c : r.checks)
    if (c.name != "throughput" && c.name != "p99 latency") {
      EXPECT_NE(c.verdict, compare::Verdict::Inconclusive) << c.name;
    }
}

TEST(GateVerdict, HolmCorrectsTheTimingChecksAsOneFamily) {
  // Both CIs wholly beyond their 0% bounds, p 0.03 and 0.04: each significant alone at 0.05
  // (Delta::significant says so), neither after Holm (0.06, 0.06): inconclusive, not fail.
  auto r = timed_result();
  r.policy.max_p99_regression_pct = 0;
  r.delta.tokens_per_sec_pct = Delta{-6, -9, -3, 0.03, true, true, "slower"};
  r.delta.p99_ms_pct = Delta{4, 1, 7, 0.04, true, true, "higher"};
  gate::apply(r);
  for (const char* name : {"throughput", "p99 latency"}) {
    const Check* c = find(r, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_EQ(c->verdict, compare::Verdict::Inconclusive) << name;
    EXPECT_NEAR(c->p_adjusted, 0.06, 1e-12) << name;
    EXPECT_NE(c->detail.find("Holm-adjusted 0.06"), std::string::npos) << c->detail;
    EXPECT_NE(c->detail.find("not significant after Holm"), std::string::npos) << c->detail;
  }
  EXPECT_NEAR(find(r, "throughput")->p_value, 0.03, 1e-15);
  EXPECT_EQ(r.exit_code, kExitPass);
  // Holm steps down: 0.02 -> 0.04, then 0.04 -> max(0.04, 1 x 0.04): both fail (Bonferroni would
  // have left the second at 0.08).
  r.delta.tokens_per_sec_pct.p_value = 0.02;
  gate::apply(r);
  EXPECT_EQ(find(r, "throughput")->verdict, compare::Verdict::Fail);
  EXPECT_EQ(find(r, "p99 latency")->verdict, compare::Verdict::Fail);
  EXPECT_NEAR(find(r, "p99 latency")->p_adjusted, 0.04, 1e-12);
}

TEST(GateVerdict, TooFewRepeatsNeverPassATimingCheck) {
  auto r = timed_result();
  r.too_few_repeats = true;
  r.repeats = 3;
  r.policy.max_slowdown_pct = 5;
  r.delta.tokens_per_sec_pct = Delta{-1, -3, 1, 0.5, false, true, "no significant change"};
  gate::apply(r);
  EXPECT_EQ(find(r, "throughput")->verdict, compare::Verdict::Inconclusive);
  EXPECT_NE(find(r, "throughput")->detail.find("too few repeats to pass"), std::string::npos);
}

TEST(GateVerdict, EveryTimingCheckReportsItsMinimumDetectableEffect) {
  auto r = timed_result();
  r.power.known = true;
  r.power.tokens_per_sec_mde_pct = 3.25;
  r.power.p99_mde_pct = 41.5;
  r.power.level = 0.025;
  gate::apply(r);
  EXPECT_DOUBLE_EQ(find(r, "throughput")->mde_pct, 3.25);
  EXPECT_DOUBLE_EQ(find(r, "p99 latency")->mde_pct, 41.5);
  EXPECT_NE(find(r, "throughput")->detail.find("minimum detectable effect 3.25%"),
            std::string::npos)
      << find(r, "throughput")->detail;
  EXPECT_NE(find(r, "p99 latency")->detail.find("minimum detectable effect 41.50%"),
            std::string::npos);
  EXPECT_TRUE(std::isnan(find(r, "finite values")->mde_pct));
}

TEST(TailStatistic, AMaximumIsCalledAMaximum) {
  auto few = tail_statistic(150, 150, 1000);  // 5 repeats x 30 timed steps
  EXPECT_EQ(few.label, "max of 150 steps");
  EXPECT_EQ(few.q, 100);
  EXPECT_FALSE(few.is_p99());
  auto enough = tail_statistic(1000, 1000, 1000);  // 5 x 200
  EXPECT_EQ(enough.label, "P99");
  EXPECT_EQ(enough.q, 99);
  EXPECT_EQ(tail_statistic(999, 1200, 1000).label, "max of 999/1200 steps");  // the smaller arm
  EXPECT_EQ(tail_statistic(150, 150, 100).label, "P99");  // a lower p99_min_samples
  EXPECT_EQ(tail_statistic(950, 950, 900).label, "P99");  // the defaults: 5 x 190 vs 900

  auto r = timed_result();
  r.tail = few;
  gate::apply(r);
  const std::string& d = find(r, "p99 latency")->detail;
  EXPECT_NE(d.find("step time max of 150 steps per arm (too few for a P99: it needs 900)"),
            std::string::npos)
      << d;
  EXPECT_EQ(d.find("P99 step time"), std::string::npos) << d;
  EXPECT_EQ(reports::text::tail_label(r), "step ms, max of 150 steps");
  EXPECT_EQ(reports::text::p50_label(r), "step ms, P50 (n=150)");
  r.tail = enough;
  gate::apply(r);
  EXPECT_NE(find(r, "p99 latency")->detail.find("P99 step time (n=1000 per arm)"),
            std::string::npos);
  EXPECT_EQ(reports::text::tail_label(r), "step ms, P99 (n=1000)");
}

TEST(Power, MdeFromThePooledPerRepeatNoise) {
  ArmResult b, v;
  b.tokens_per_sec_repeats = {900, 1000, 1100};   // cv 0.1
  v.tokens_per_sec_repeats = {1800, 2000, 2200};  // cv 0.1: a 2x speed-up is not noise
  for (int k = 0; k < 3; ++k) {
    b.step_ms_repeats.push_back({10, 10, 10, 10.0 + k});
    v.step_ms_repeats.push_back({5, 5, 5, 5.0 + k});
  }
  auto pw = timing_power(b, v, 100, 0.05);
  ASSERT_TRUE(pw.known);
  // sigma 10%, 3 repeats per arm: 2.801585 * 10 * sqrt(2/3).
  EXPECT_NEAR(pw.tokens_per_sec_mde_pct, 2.801585218112968 * 10 * std::sqrt(2.0 / 3), 1e-9);
  EXPECT_NEAR(pw.p50_mde_pct, 0, 1e-12);  // every repeat's median is the same
  // Per-repeat maxima 10, 11, 12 (cv 1/11) and 5, 6, 7 (cv 1/6).
  const double cv = 100 * std::sqrt((2 * std::pow(1.0 / 11, 2) + 2 * std::pow(1.0 / 6, 2)) / 4);
  EXPECT_NEAR(pw.p99_mde_pct, 2.801585218112968 * cv * std::sqrt(2.0 / 3), 1e-9);
  b.tokens_per_sec_repeats.resize(1);
  b.step_ms_repeats.resize(1);
  EXPECT_FALSE(timing_power(b, v, 100, 0.05).known);  // one repeat: no noise to measure
}

TEST(CommonPeak, TheLargerPeakOfTheTwoArms) {
  ArmResult b, v;
  b.alignment_run.peak_flops = 1.0e11;
  b.alignment_run.peak_flops_source = "calibrated fp32 GEMM";
  v.alignment_run.peak_flops = 2.5e11;
  v.alignment_run.peak_flops_source = "calibrated bf16 GEMM";
  auto c = common_peak(b, v);
  EXPECT_EQ(c.flops, 2.5e11);
  EXPECT_EQ(c.arm, "variant");
  EXPECT_EQ(c.source, "calibrated bf16 GEMM");
  v.alignment_run.peak_flops.reset();
  EXPECT_TRUE(std::isnan(common_peak(b, v).flops));
}

// analyse_timing end to end on synthetic repeats: tail statistic, n, MFU against the common peak.
TEST(AnalyseTiming, PoolsRepeatsNamesTheTailAndMeasuresMfuAgainstOnePeak) {
  ComparisonPlan plan;
  std::vector<runs::RunOutcome> outs;
  CompareResult r;
  r.mode = compare::Mode::AB;
  r.policy.repeats = 5;
  r.baseline.label = "baseline";
  r.variant.label = "variant";
  r.baseline.alignment_run.peak_flops = 1.0e9;  // fp32 peak
  r.variant.alignment_run.peak_flops = 4.0e9;   // bf16 peak
  r.variant.alignment_run.peak_flops_source = "bf16 table";
  for (int k = 0; k < 10; ++k) {
    const bool is_b = k % 2 == 0;
    ArmRun run;
    run.arm = is_b ? compare::Arm::Baseline : compare::Arm::Variant;
    run.role = compare::Role::Timing;
    plan.timing.push_back(run);
    runs::RunOutcome o;
    o.summary.tokens_per_sec = is_b ? 1000.0 + k : 2000.0 + k;  // the variant twice as fast
    o.summary.flops_per_token = 1.0e5;
    o.summary.peak_flops = is_b ? 1.0e9 : 4.0e9;
    o.summary.mfu = o.summary.flops_per_token * o.summary.tokens_per_sec / *o.summary.peak_flops;
    for (int i = 0; i < 30; ++i) {
      StepRecord rec;
      rec.step = i + 1;
      rec.loss = 1.0;
      rec.timed = true;
      rec.step_ms = (is_b ? 20.0 : 10.0) + 0.01 * i + (i == 29 ? 5 : 0);
      o.records.push_back(rec);
    }
    outs.push_back(o);
  }
  r.baseline.loss_curve = r.variant.loss_curve = std::vector<double>(30, 1.0);
  const CompareResult before = r;
  analyse_timing(plan, outs, r);
  ASSERT_TRUE(r.timed);
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("MFU is"), std::string::npos) << w;
  // A peak below what the arm achieved (a calibration made under load): said, not hidden.
  for (size_t k = 0; k < outs.size(); k += 2) {
    outs[k].summary.mfu = 2.5;
    outs[k].summary.peak_flops_source = "calibrated fp32 GEMM, 1 thread";
  }
  CompareResult stale = before;
  analyse_timing(plan, outs, stale);
  bool warned = false;
  for (const auto& w : stale.warnings)
    warned = warned || w.find("the baseline arm's MFU is 250% of its own peak (calibrated fp32 "
                              "GEMM, 1 thread)") == 0;
  EXPECT_TRUE(warned);
  EXPECT_EQ(r.baseline.step_ms_n, 150);
  EXPECT_EQ(r.tail.label, "max of 150 steps");
  EXPECT_DOUBLE_EQ(r.baseline.step_ms_tail, 20.0 + 0.29 + 5);  // the slowest of 150 steps
  EXPECT_DOUBLE_EQ(r.variant.step_ms_tail, 10.0 + 0.29 + 5);
  // Own peaks: 10% vs 5% (the variant "lower"); against the common bf16 peak: 2.5% vs 5%.
  ASSERT_TRUE(r.baseline.mfu && r.variant.mfu);
  EXPECT_NEAR(*r.baseline.mfu, 0.1004, 1e-9);
  EXPECT_NEAR(*r.variant.mfu, 0.05, 1e-3);
  EXPECT_EQ(r.common_peak.arm, "variant");
  EXPECT_EQ(r.common_peak.source, "bf16 table");
  ASSERT_TRUE(r.baseline.mfu_common && r.variant.mfu_common);
  EXPECT_NEAR(*r.baseline.mfu_common, 0.1004 / 4, 1e-9);
  EXPECT_NEAR(*r.variant.mfu_common, 0.05, 1e-3);
  EXPECT_LT(r.delta.mfu_pts.point, 0);         // own peaks: "lower" ...
  EXPECT_GT(r.delta.mfu_common_pts.point, 0);  // ... one common peak: higher, like tokens/s
  EXPECT_TRUE(r.power.known);
  EXPECT_NEAR(r.power.level, 0.05 / 2, 1e-15);
  // Every repeat's maximum is the same 5 ms stall over a ~constant step: tiny noise, tiny MDE.
  EXPECT_LT(r.power.p99_mde_pct, 1.0);
}

TEST(GateVerdict, OnInconclusiveAndTheTailThresholdArePolicyKeys) {
  const std::string base = std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml";
  const auto defaults = gate::Policy::from(config::Config::load(base));
  EXPECT_EQ(defaults.on_inconclusive, gate::OnInconclusive::Pass);
  EXPECT_EQ(defaults.timing_steps, 200);
  EXPECT_EQ(defaults.p99_min_samples, 900);
  // A P99 exists by default: a repeat of the shipped 200-step config times 200 - 5 warmup - 5
  // profiled = 190 steps (it never runs past run.steps), and 5 x 190 = 950 >= 900.
  const auto cfg = config::Config::load(base);
  const int64_t fit = std::min(defaults.timing_steps, cfg.integer("run.steps") -
                                                          cfg.integer("run.warmup_steps") -
                                                          cfg.integer("profile.window"));
  EXPECT_EQ(fit, 190);
  EXPECT_GE(defaults.repeats * fit, defaults.p99_min_samples);
  const auto strict = gate::Policy::from(
      config::Config::load(base, {"gate.on_inconclusive=\"fail\"", "gate.p99_min_samples=500"}));
  EXPECT_EQ(strict.on_inconclusive, gate::OnInconclusive::Fail);
  EXPECT_EQ(strict.p99_min_samples, 500);
  EXPECT_NE(strict.describe().find("inconclusive timing check (CI straddles its bound): fail"),
            std::string::npos)
      << strict.describe();
  EXPECT_THROW(config::Config::load(base, {"gate.on_inconclusive=\"maybe\""}), config::ConfigError);
  EXPECT_THROW(config::Config::load(base, {"gate.p99_min_samples=10"}), config::ConfigError);
}

// The function probe's rule over hand-made records: 2 checkpoints x 3 tensors, 4 buckets.
namespace {
train::ProbeRecord probe_record(const std::vector<std::vector<std::vector<double>>>& sk) {
  train::ProbeRecord p;
  p.steps = {10, 20};
  p.tensors = {"layer_norm[0]", "attention[0]", "logits[0]"};
  p.buckets = 4;
  p.sketches = sk;
  return p;
}
}  // namespace

TEST(Probe, RatiosAgainstTheNoiseEnvelopeAndTheFirstTensorOutside) {
  using V = std::vector<double>;
  const V zero{0, 0, 0, 0};
  const auto ref = probe_record({{zero, zero, zero}, {zero, zero, zero}});
  // Noise: nothing at layer_norm[0] (E = 0), 1 and 2 elsewhere (E = the larger, 2 at step 10;
  // 0.5 and 1 at step 20: E = 1).
  const auto n1 = probe_record({{zero, V{1, 0, 0, 0}, V{0, 2, 0, 0}}, {zero, V{0.5, 0, 0, 0}, V{1, 0, 0, 0}}});
  const auto n2 = probe_record({{zero, V{0, 2, 0, 0}, V{0, 0, 1, 0}}, {zero, V{0, 1, 0, 0}, V{0, 0, 0, 0}}});
  // The variant: inside at step 10; at step 20 attention[0] at distance 5 = 5 x E, logits at 3 x E.
  const auto var = probe_record({{zero, V{1, 1, 0, 0}, V{0, 0, 0, 2}}, {zero, V{3, 4, 0, 0}, V{0, 3, 0, 0}}});
  const auto c = judge_probe(ref, var, {n1, n2}, 2.5);
  EXPECT_TRUE(c.run);
  EXPECT_EQ(c.noise_runs, 2);
  ASSERT_EQ(c.ratio.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ratio[0][0], 0);  // E = 0 and no difference: inside
  EXPECT_DOUBLE_EQ(c.envelope[0][1], 2);
  EXPECT_DOUBLE_EQ(c.ratio[0][1], std::sqrt(2.0) / 2);
  EXPECT_DOUBLE_EQ(c.ratio[0][2], 1);
  EXPECT_DOUBLE_EQ(c.variant[1][1], 5);
  EXPECT_DOUBLE_EQ(c.ratio[1][1], 5);
  EXPECT_DOUBLE_EQ(c.ratio[1][2], 3);
  EXPECT_DOUBLE_EQ(c.ratio_max, 5);
  EXPECT_EQ(c.at_step, 20);
  EXPECT_EQ(c.at_tensor, "attention[0]");
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.first_outside_tensor, "attention[0]");
  EXPECT_EQ(c.first_outside_step, 20);
  // At c = 5 every ratio is within the bound (<=): inside.
  const auto c5 = judge_probe(ref, var, {n1, n2}, 5);
  EXPECT_TRUE(c5.passed);
  EXPECT_TRUE(c5.first_outside_tensor.empty());

  // A difference where the noise reaches nothing is outside at any factor.
  auto var0 = var;
  var0.sketches[0][0] = V{0, 0, 1e-9, 0};
  const auto c0 = judge_probe(ref, var0, {n1, n2}, 1000);
  EXPECT_TRUE(std::isinf(c0.ratio[0][0]));
  EXPECT_EQ(c0.first_outside_tensor, "layer_norm[0]");
  EXPECT_EQ(c0.first_outside_step, 10);

  // Records of another shape are refused, as is a probe without noise.
  auto other = var;
  other.steps = {10, 30};
  EXPECT_THROW(judge_probe(ref, other, {n1}, 2.5), std::invalid_argument);
  EXPECT_THROW(judge_probe(ref, var, {}, 2.5), std::invalid_argument);
}

TEST(Probe, RecordsRoundTripThroughTheirFilesAndABrokenOneIsNamed) {
  const fs::path dir = fs::temp_directory_path() / ("lockstep-probe-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto rec = probe_record({{{1, -2, 3, 0.5}, {0, 0, 0, 1e-300}, {7, 8, 9, 10}},
                                 {{-1, 2, -3, 4}, {5, 6, 7, 8}, {1.25, 0, 0, 0}}});
  train::write_probe(dir, rec);
  const auto back = train::read_probe(dir);
  EXPECT_EQ(back.steps, rec.steps);
  EXPECT_EQ(back.tensors, rec.tensors);
  EXPECT_EQ(back.buckets, 4);
  EXPECT_EQ(back.sketches, rec.sketches);  // bitwise
  fs::resize_file(dir / "probe.bin", 8 * 23);
  try {
    train::read_probe(dir);
    ADD_FAILURE() << "a short probe.bin was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("probe.bin: 192 bytes expected"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
  EXPECT_THROW(train::read_probe(dir), std::runtime_error);
}

// analyse_probe over real probe files: a probe outside turns an aligned variant into a rejected,
// untimed one; a probe run that failed is its arm's failure; nothing planned says why.
TEST(Probe, AnalyseJudgesTheFilesAndAFailedProbeIsItsArmsFailure) {
  const fs::path root = fs::temp_directory_path() / ("lockstep-probe-an-" + std::to_string(::getpid()));
  fs::remove_all(root);
  using V = std::vector<double>;
  const V zero{0, 0, 0, 0};
  ComparisonPlan plan;
  const std::vector<std::string> labels{"baseline", "variant", "baseline-noise1"};
  for (const auto& l : labels) {
    ArmRun a;
    a.arm = l == "variant" ? compare::Arm::Variant : compare::Arm::Baseline;
    a.role = compare::Role::Probe;
    a.job.label = l;
    a.job.dir = root / l;
    a.job.probe_from = root / "arms-baseline";
    plan.probes.push_back(a);
  }
  plan.probe_noise = 0.00390625;
  plan.probe_noise_source = "unit roundoff of bf16 (2^-8)";
  train::write_probe(root / "baseline", probe_record({{zero, zero, zero}, {zero, zero, zero}}));
  train::write_probe(root / "baseline-noise1",
                     probe_record({{zero, V{1, 0, 0, 0}, V{1, 0, 0, 0}}, {zero, V{1, 0, 0, 0}, V{1, 0, 0, 0}}}));
  auto fresh = [] {
    CompareResult r;
    r.mode = compare::Mode::AB;
    r.baseline.label = "baseline";
    r.variant.label = "variant";
    r.policy.probe_factor = 2;
    r.alignment.rule = compare::Rule::Envelope;
    r.alignment.aligned = true;
    r.alignment.explanation = "approximate knob: inside";
    return r;
  };
  const std::vector<runs::RunOutcome> ok(3);
  // Inside: 1.5 x E at most.
  train::write_probe(root / "variant",
                     probe_record({{zero, V{1.5, 0, 0, 0}, zero}, {zero, V{0, 1, 0, 0}, zero}}));
  auto in = fresh();
  analyse_probe(plan, ok, in);
  EXPECT_TRUE(in.alignment.probe.run);
  EXPECT_TRUE(in.alignment.probe.passed);
  EXPECT_TRUE(in.alignment.aligned);
  EXPECT_EQ(in.alignment.probe.noise_source, "unit roundoff of bf16 (2^-8)");
  EXPECT_NE(in.alignment.explanation.find("the function probe at 2 checkpoints is inside: largest "
                                          "ratio 1.50 (attention[0] at step 10) <= 2"),
            std::string::npos)
      << in.alignment.explanation;
  EXPECT_TRUE(should_time(in));
  // Outside at logits, step 20: rejected, not timed, and the reports' sentence names it.
  train::write_probe(root / "variant",
                     probe_record({{zero, V{1.5, 0, 0, 0}, zero}, {zero, zero, V{0, 3, 0, 0}}}));
  auto out = fresh();
  analyse_probe(plan, ok, out);
  EXPECT_FALSE(out.alignment.probe.passed);
  EXPECT_FALSE(out.alignment.aligned);
  EXPECT_FALSE(should_time(out));
  ASSERT_FALSE(out.warnings.empty());
  EXPECT_EQ(out.warnings.back().rfind("not timed: the function probe", 0), 0u) << out.warnings.back();
  EXPECT_EQ(reports::text::probe_summary(out.alignment),
            "function probe (2 checkpoints x 3 tensors, 1 noise probe): largest ratio 3.00 "
            "(logits[0] at step 20), bound 2: OUTSIDE, first in forward order at logits[0] (step 20)");
  // The variant's probe crashed: the variant failed (exit 3), the probe did not run.
  std::vector<runs::RunOutcome> crashed(3);
  crashed[1].status = RunStatus::Crashed;
  crashed[1].failure = "exit 1: boom";
  auto failed = fresh();
  analyse_probe(plan, crashed, failed);
  EXPECT_FALSE(failed.alignment.probe.run);
  EXPECT_EQ(failed.alignment.probe.note, "not run: the variant probe crashed");
  EXPECT_EQ(failed.failed_arm, Arm::Variant);
  EXPECT_EQ(failed.failure, "crashed: function probe variant: exit 1: boom");
  // An unreadable record is the same kind of failure, named by its file.
  fs::remove(root / "baseline-noise1" / "probe.bin");
  auto unreadable = fresh();
  analyse_probe(plan, ok, unreadable);
  EXPECT_EQ(unreadable.failed_arm, Arm::Baseline);
  EXPECT_NE(unreadable.failure.find("baseline-noise1/probe.bin"), std::string::npos)
      << unreadable.failure;
  // Nothing planned: the plan's note is the report's.
  ComparisonPlan none;
  none.probe_note = "not run: the probe needs one rank and zero_stage = 0 on both arms";
  auto n = fresh();
  analyse_probe(none, {}, n);
  EXPECT_FALSE(n.alignment.probe.run);
  EXPECT_EQ(reports::text::probe_summary(n.alignment),
            "function probe not run: the probe needs one rank and zero_stage = 0 on both arms");
  EXPECT_TRUE(n.alignment.aligned);
  fs::remove_all(root);
}
