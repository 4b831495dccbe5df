// The comparison's first stage (harness/compare/plan.h), before anything runs: which runs the
// method needs, for which arm and purpose, in which order, folders and overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/compare/bisect.h"
#include "harness/compare/envelope_noise.h"
#include "harness/compare/plan.h"
#include "harness/util/exit_codes.h"

namespace lockstep::compare {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = LOCKSTEP_SOURCE_DIR;

CompareRequest bf16_request() {
  CompareRequest req;
  req.baseline = {"baseline", kSrc + "/configs/baseline.toml", {}};
  req.variant = {"variant", kSrc + "/configs/variants/bf16.toml", {}};
  req.out_dir = "/nonexistent/cmp";  // planning creates nothing
  req.steps = 50;
  req.repeats = 3;
  req.parallel = 2;
  return req;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The envelope's u is the declared dtype's (issue 54): the trainer's hello first, then
// [precision] compute, then the default fp32; a variant that declares approximate with the
// baseline's dtype is warned, the warning naming the u and the line to add.
TEST(ComparisonPlan, TheEnvelopeNoiseComesFromTheDeclaredDtypeHelloFirst) {
  CompareRequest req = bf16_request();
  req.variant = {"variant", kSrc + "/configs/baseline.toml", {"gate.alignment=\"approximate\""}};
  const auto p = plan_comparison(req);
  EXPECT_EQ(p.envelope_noise, std::ldexp(1.0, -24));
  EXPECT_EQ(p.envelope_noise_dtype.dtype, "fp32");
  EXPECT_EQ(p.envelope_noise_dtype.arm, Arm::Variant);
  EXPECT_EQ(p.envelope_noise_dtype.from, DtypeFrom::Default);
  const std::string line = "add compute = \"bf16\" under [precision] in " + req.variant.config;
  EXPECT_TRUE(std::any_of(p.warnings.begin(), p.warnings.end(), [&](const std::string& w) {
    return w.find("computes in fp32 like the baseline") != std::string::npos &&
           w.find("u = 2^-24") != std::string::npos && w.find(line) != std::string::npos;
  })) << ::testing::PrintToString(p.warnings);

  TrainerProtocol bf16_hello, fp16_hello;
  bf16_hello.version = fp16_hello.version = 2;
  bf16_hello.compute = "bf16";
  fp16_hello.compute = "fp16";
  auto n = choose_envelope_noise(p.policy, p.baseline_config, p.variant_config, TrainerProtocol{},
                                 bf16_hello);
  EXPECT_EQ(n.u, 0.00390625);
  EXPECT_EQ(n.source, "unit roundoff of bf16 (2^-8)");
  EXPECT_EQ(n.dtype.dtype, "bf16");
  EXPECT_EQ(n.dtype.from, DtypeFrom::Hello);
  EXPECT_EQ(same_dtype_warning(p.policy, n, req.variant.config, ""), "");  // bf16 vs fp32
  // The baseline's hello counts too: the coarser of the two, the variant's on a tie.
  n = choose_envelope_noise(p.policy, p.baseline_config, p.variant_config, bf16_hello, TrainerProtocol{});
  EXPECT_EQ(n.dtype.arm, Arm::Baseline);
  EXPECT_EQ(n.dtype.from, DtypeFrom::Hello);

  // [precision] compute = "bf16" (configs/variants/bf16.toml): the config; a hello wins over it.
  const auto q = plan_comparison(bf16_request());
  EXPECT_EQ(q.envelope_noise_dtype.dtype, "bf16");
  EXPECT_EQ(q.envelope_noise_dtype.from, DtypeFrom::Config);
  n = choose_envelope_noise(q.policy, q.baseline_config, q.variant_config, TrainerProtocol{},
                            fp16_hello);
  EXPECT_EQ(n.u, std::ldexp(1.0, -11));
  EXPECT_EQ(n.dtype.dtype, "fp16");
  EXPECT_EQ(n.dtype.from, DtypeFrom::Hello);
  // An observed dtype is named in the warning, never used for u.
  TrainerProtocol seen;
  seen.observed_compute = "fp16";
  n = choose_envelope_noise(p.policy, p.baseline_config, p.variant_config, TrainerProtocol{}, seen);
  EXPECT_EQ(n.u, std::ldexp(1.0, -24));
  const auto w = same_dtype_warning(p.policy, n, "v.toml", "fp16");
  EXPECT_NE(w.find("add compute = \"fp16\" under [precision] in v.toml"), std::string::npos) << w;
  EXPECT_NE(w.find("seen computing in fp16 (observed, not declared)"), std::string::npos) << w;
}

TEST(ComparisonPlan, AnApproximateKnobGetsTheNoiseEnvelopeAndInterleavedRepeats) {
  const auto p = plan_comparison(bf16_request());
  EXPECT_STREQ(to_string(p.mode), "ab");
  EXPECT_STREQ(config::knob_class_name(p.klass), "approximate");
  EXPECT_EQ(p.approximate_rule, compare::Rule::Envelope);
  EXPECT_EQ(p.parallel, 2);
  EXPECT_EQ(p.policy.repeats, 3);
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_EQ(p.warnings.front().rfind("too few repeats: 3 per arm", 0), 0u) << p.warnings.front();
  // The noise is bf16's unit roundoff, the lower of the arms' precisions.
  EXPECT_EQ(p.envelope_noise, 0.00390625);
  EXPECT_EQ(p.envelope_noise_source, "unit roundoff of bf16 (2^-8)");

  // Full-length runs: each arm at the comparison seed, then the baseline 3 times at the same seed
  // with weight noise, noise seeds 1, 2, 3.
  ASSERT_EQ(p.alignment.size(), 5u);
  const int64_t seed = p.baseline_config.integer("run.seed");
  const std::vector<std::string> arms{"baseline", "variant", "baseline", "baseline", "baseline"};
  const std::vector<std::string> roles{"full", "full", "envelope", "envelope", "envelope"};
  const std::vector<std::string> dirs{"baseline", "variant", "baseline-noise1", "baseline-noise2",
                                      "baseline-noise3"};
  for (size_t i = 0; i < p.alignment.size(); ++i) {
    const auto& a = p.alignment[i];
    EXPECT_EQ(to_string(a.arm), arms[i]) << i;
    EXPECT_EQ(to_string(a.role), roles[i]) << i;
    EXPECT_EQ(a.seed, seed) << i;  // the same seed: only the rounding-sized noise differs
    EXPECT_EQ(a.job.dir, fs::path("/nonexistent/cmp/arms") / dirs[i]) << i;
    EXPECT_EQ(a.job.stop_after, 0) << i;  // the whole schedule
    EXPECT_TRUE(has(a.job.sets, "run.steps=50")) << i;
    EXPECT_EQ(has(a.job.sets, "faults.weight_rounding_noise=0.00390625"), i >= 2) << i;
    if (i >= 2) {
      EXPECT_EQ(a.noise_seed, static_cast<int64_t>(i) - 1) << i;
      EXPECT_TRUE(has(a.job.sets, "faults.noise_seed=" + std::to_string(i - 1))) << i;
      EXPECT_EQ(a.job.config, kSrc + "/configs/baseline.toml") << i;
    }
  }
  EXPECT_EQ(p.alignment[1].job.config, kSrc + "/configs/variants/bf16.toml");

  // Timing: A B, B A, A B, each stopped after warmup + profile window + timed steps.
  ASSERT_EQ(p.timing.size(), 6u);
  const std::vector<std::string> order{"baseline", "variant",  "variant",
                                       "baseline", "baseline", "variant"};
  const int64_t window =
      std::min<int64_t>(p.baseline_config.integer("run.warmup_steps") +
                            p.baseline_config.integer("profile.window") + p.policy.timing_steps,
                        50);
  for (size_t i = 0; i < p.timing.size(); ++i) {
    const auto& t = p.timing[i];
    EXPECT_EQ(to_string(t.arm), order[i]) << i;
    EXPECT_STREQ(to_string(t.role), "timing") << i;
    EXPECT_EQ(t.job.stop_after, window) << i;
    char name[32];
    std::snprintf(name, sizeof name, "%02zu-%s", i + 1, order[i].c_str());
    EXPECT_EQ(t.job.dir, fs::path("/nonexistent/cmp/arms/timing") / name) << i;
  }
}

// The function probe: the baseline's full run checkpoints at 1/5 of its steps; then one probe of
// those checkpoints per numerics (the baseline's, the variant's, each envelope noise), each in a
// folder of its own under arms/probe/.
TEST(ComparisonPlan, TheEnvelopeRuleProbesTheBaselinesCheckpoints) {
  const auto p = plan_comparison(bf16_request());  // 50 steps
  EXPECT_EQ(p.probe_every, 10);
  EXPECT_TRUE(p.probe_note.empty()) << p.probe_note;
  const auto& full = p.alignment[0].job;
  EXPECT_TRUE(has(full.sets, "checkpoint.every=10"));
  EXPECT_TRUE(has(full.sets, "checkpoint.keep=5"));
  for (size_t i = 1; i < p.alignment.size(); ++i)  // only the baseline's full run checkpoints
    EXPECT_FALSE(has(p.alignment[i].job.sets, "checkpoint.every=10")) << i;
  ASSERT_EQ(p.probes.size(), 5u);
  const std::vector<std::string> labels{"baseline", "variant", "baseline-noise1",
                                        "baseline-noise2", "baseline-noise3"};
  for (size_t i = 0; i < p.probes.size(); ++i) {
    const auto& pr = p.probes[i];
    EXPECT_STREQ(to_string(pr.role), "probe") << i;
    EXPECT_STREQ(to_string(pr.arm), i == 1 ? "variant" : "baseline") << i;
    EXPECT_EQ(pr.job.dir, fs::path("/nonexistent/cmp/arms/probe") / labels[i]) << i;
    EXPECT_EQ(pr.job.probe_from, fs::path("/nonexistent/cmp/arms/baseline")) << i;
    EXPECT_EQ(pr.job.config, kSrc + (i == 1 ? "/configs/variants/bf16.toml" : "/configs/baseline.toml"));
    EXPECT_EQ(has(pr.job.sets, "faults.weight_rounding_noise=0.00390625"), i >= 2) << i;
    EXPECT_EQ(pr.noise_seed, i >= 2 ? static_cast<int64_t>(i) - 1 : 0) << i;
    const auto argv = runs::child_argv(pr.job);
    const auto at = std::find(argv.begin(), argv.end(), "--probe");
    ASSERT_NE(at, argv.end()) << i;
    EXPECT_EQ(*(at + 1), "/nonexistent/cmp/arms/baseline") << i;
  }
  // Two ranks: the probe loads unsharded single-rank checkpoints only, and says so.
  CompareRequest req = bf16_request();
  req.baseline.sets.push_back("parallel.world_size=2");
  req.variant.sets.push_back("parallel.world_size=2");
  const auto p2 = plan_comparison(req);
  EXPECT_EQ(p2.approximate_rule, compare::Rule::Envelope);
  EXPECT_TRUE(p2.probes.empty());
  EXPECT_EQ(p2.probe_every, 0);
  EXPECT_EQ(p2.probe_note, "not run: the probe needs one rank and zero_stage = 0 on both arms");
  EXPECT_FALSE(has(p2.alignment[0].job.sets, "checkpoint.every=10"));
  EXPECT_EQ(p.probe_noise_source, "unit roundoff of bf16 (2^-8)");
  // An exact kernel change is probed against fp32-sized noise (there are no envelope runs).
  CompareRequest exact = bf16_request();
  exact.variant = {"variant", kSrc + "/configs/variants/fused_attention.toml", {}};
  const auto p3 = plan_comparison(exact);
  EXPECT_STREQ(config::knob_class_name(p3.klass), "exact");
  ASSERT_EQ(p3.probes.size(), 5u);
  EXPECT_EQ(p3.probe_noise_source, "unit roundoff of fp32 (2^-24)");
  EXPECT_TRUE(has(p3.probes[4].job.sets, "faults.weight_rounding_noise=5.9604644775390625e-08"));
  EXPECT_TRUE(has(p3.probes[4].job.sets, "faults.noise_seed=3"));
  EXPECT_TRUE(has(p3.alignment[0].job.sets, "checkpoint.every=10"));
  // A fault alone changes no implementation: no probe (the stall tests' comparisons), and bisect's
  // trials run without one.
  CompareRequest fault = bf16_request();
  fault.variant = {"variant", kSrc + "/configs/baseline.toml", {"faults.stall_every=10"}};
  EXPECT_TRUE(plan_comparison(fault).probes.empty());
  CompareRequest off = bf16_request();
  off.probe = false;
  EXPECT_TRUE(plan_comparison(off).probes.empty());
}

TEST(ComparisonPlan, GoldenModeRunsTheVariantOnlyAndTimesNothing) {
  const fs::path golden = fs::temp_directory_path() / "lockstep-plan-golden.loss";
  {
    std::ofstream out(golden);
    for (int step = 1; step <= 20; ++step) out << step << " " << 6.0 - 0.1 * step << "\n";
  }
  CompareRequest req = bf16_request();
  req.baseline = {};
  req.golden_file = golden.string();
  req.steps = 20;  // the golden file's length (another length: below)
  const auto p = plan_comparison(req);
  EXPECT_STREQ(to_string(p.mode), "golden");
  // bf16 is approximate here too (the variant's own knobs against the defaults), and the seed
  // band comes from the variant's seeds: there is no baseline config to run.
  EXPECT_STREQ(config::knob_class_name(p.klass), "approximate");
  EXPECT_EQ(p.changed_knobs, (std::vector<std::string>{"precision.compute"}));
  EXPECT_NE(p.klass_source.find("the variant's own knobs against the defaults"),
            std::string::npos)
      << p.klass_source;
  ASSERT_EQ(p.alignment.size(), 3u);
  EXPECT_STREQ(to_string(p.alignment[0].arm), "variant");
  EXPECT_STREQ(to_string(p.alignment[0].role), "full");
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_STREQ(to_string(p.alignment[i].arm), "variant");
    EXPECT_STREQ(to_string(p.alignment[i].role), "seed band");
    EXPECT_EQ(p.alignment[i].job.config, kSrc + "/configs/variants/bf16.toml");
    EXPECT_EQ(p.alignment[i].job.dir,
              fs::path("/nonexistent/cmp/arms") / ("variant-seed" + std::to_string(1234 + i)));
  }
  EXPECT_TRUE(p.timing.empty());
  ASSERT_EQ(p.golden_curve.size(), 20u);
  EXPECT_DOUBLE_EQ(p.golden_curve[2], 5.7);
  EXPECT_TRUE(p.changes.empty());
  // A golden file of another length than the run is another LR schedule: exit 2, both lengths.
  req.steps = 50;
  try {
    plan_comparison(req);
    ADD_FAILURE() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              golden.string() +
                  ": the golden curve ends at step 20 but the variant runs 50 steps (--steps); a "
                  "different length is a different LR schedule: give --steps 20 or a golden file "
                  "of the same length");
  }
  fs::remove(golden);
}

TEST(ComparisonPlan, AWorkloadChangeHasNoSeedBandAndIsStillTimed) {
  CompareRequest req = bf16_request();
  req.variant = {"variant", kSrc + "/tests/configs/batch4.toml", {}};
  const auto p = plan_comparison(req);
  EXPECT_STREQ(config::knob_class_name(p.klass), "workload");
  EXPECT_EQ(p.workload_changes, (std::vector<std::string>{"data.batch_size"}));
  EXPECT_EQ(p.alignment.size(), 2u);           // baseline and variant, no seed band
  EXPECT_EQ(p.timing.size(), 2u * 3u);         // both arms timed
}

// [gate] envelope_runs and envelope_noise: K runs with the user's noise size, named as theirs.
TEST(ComparisonPlan, TheEnvelopeTakesItsRunsAndNoiseFromTheGateSection) {
  const fs::path policy = fs::temp_directory_path() / "lockstep-plan-envelope-policy.toml";
  {
    std::ofstream out(policy);
    out << "[gate]\nenvelope_runs = 2\nenvelope_noise = 0.001\n";
  }
  CompareRequest req = bf16_request();
  req.policy_file = policy.string();
  const auto p = plan_comparison(req);
  fs::remove(policy);
  EXPECT_EQ(p.envelope_noise, 0.001);
  EXPECT_EQ(p.envelope_noise_source, "[gate] envelope_noise");
  size_t envelope_runs = 0;
  for (const auto& a : p.alignment) {
    if (a.role != compare::Role::Envelope) continue;
    ++envelope_runs;
    EXPECT_TRUE(has(a.job.sets, "faults.weight_rounding_noise=0.001")) << a.job.label;
  }
  EXPECT_EQ(envelope_runs, 2u);
}

TEST(ComparisonPlan, ACheckStepPastTheLastStepIsAUsageErrorBeforeAnyRun) {
  CompareRequest req = bf16_request();
  req.check_step = 51;
  EXPECT_THROW(plan_comparison(req), UsageError);
  req.check_step = 50;
  EXPECT_EQ(plan_comparison(req).policy.check_step, 50);
}

// bisect: each trial applies one knob (or the knobs so far) to the baseline; a variant's declared
// [gate] alignment is its statement of what math it is and goes into every trial, as its plugin
// files do; its other [gate] keys (bounds) do not (the baseline's or --policy's apply).
TEST(BisectPlan, TrialsCarryTheVariantsDeclaredAlignmentButNotItsBounds) {
  const auto base = config::Config::parse("[run]\nname = \"b\"\n", "base.toml");
  const auto var = config::Config::parse(
      "[run]\nname = \"v\"\n[precision]\ncompute = \"bf16\"\n[attention]\nimpl = \"fused\"\n"
      "[gate]\nalignment = \"approximate\"\nmax_slowdown_pct = 50.0\n",
      "var.toml");
  const auto p = plan_bisect(base, var);
  EXPECT_EQ(p.knobs, (std::vector<std::string>{"precision.compute", "attention.impl"}));
  ASSERT_EQ(p.sets.size(), 2u);
  EXPECT_EQ(p.sets[0].rfind("precision.compute=", 0), 0u) << p.sets[0];
  EXPECT_EQ(p.sets[1].rfind("attention.impl=", 0), 0u) << p.sets[1];
  ASSERT_EQ(p.carry.size(), 1u);
  EXPECT_EQ(p.carry[0].rfind("gate.alignment=", 0), 0u) << p.carry[0];
  EXPECT_NE(p.carry[0].find("approximate"), std::string::npos) << p.carry[0];
  // Without a declaration nothing is carried.
  EXPECT_TRUE(plan_bisect(base, base).carry.empty());
}

}  // namespace
}  // namespace lockstep::compare
