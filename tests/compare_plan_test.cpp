// The comparison's first stage (harness/compare/plan.h), before anything runs: which runs the
// method needs, for which arm and purpose, in which order, folders and overrides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness/compare/plan.h"
#include "harness/exit_codes.h"

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

TEST(ComparisonPlan, AnApproximateKnobGetsTheSeedBandAndInterleavedRepeats) {
  const auto p = plan_comparison(bf16_request());
  EXPECT_EQ(p.mode, "ab");
  EXPECT_EQ(p.klass, "approximate");
  EXPECT_EQ(p.parallel, 2);
  EXPECT_EQ(p.policy.repeats, 3);
  ASSERT_FALSE(p.warnings.empty());
  EXPECT_EQ(p.warnings.front().rfind("too few repeats: 3 per arm", 0), 0u) << p.warnings.front();

  // Full-length runs: each arm at the comparison seed, then the baseline at 2 more seeds.
  ASSERT_EQ(p.alignment.size(), 4u);
  const int64_t seed = p.baseline_config.integer("run.seed");
  const std::vector<std::string> arms{"baseline", "variant", "baseline", "baseline"};
  const std::vector<std::string> roles{"full", "full", "seed band", "seed band"};
  const std::vector<int64_t> seeds{seed, seed, seed + 1, seed + 2};
  const std::vector<std::string> dirs{"baseline", "variant",
                                      "baseline-seed" + std::to_string(seed + 1),
                                      "baseline-seed" + std::to_string(seed + 2)};
  for (size_t i = 0; i < p.alignment.size(); ++i) {
    const auto& a = p.alignment[i];
    EXPECT_EQ(a.arm, arms[i]) << i;
    EXPECT_EQ(a.role, roles[i]) << i;
    EXPECT_EQ(a.seed, seeds[i]) << i;
    EXPECT_EQ(a.job.dir, fs::path("/nonexistent/cmp/arms") / dirs[i]) << i;
    EXPECT_EQ(a.job.stop_after, 0) << i;  // the whole schedule
    EXPECT_TRUE(has(a.job.sets, "run.steps=50")) << i;
  }
  EXPECT_EQ(p.alignment[1].job.config, kSrc + "/configs/variants/bf16.toml");
  EXPECT_TRUE(has(p.alignment[2].job.sets, "run.seed=" + std::to_string(seed + 1)));
  EXPECT_FALSE(has(p.alignment[0].job.sets, "run.seed=" + std::to_string(seed + 1)));

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
    EXPECT_EQ(t.arm, order[i]) << i;
    EXPECT_EQ(t.role, "timing") << i;
    EXPECT_EQ(t.job.stop_after, window) << i;
    char name[32];
    std::snprintf(name, sizeof name, "%02zu-%s", i + 1, order[i].c_str());
    EXPECT_EQ(t.job.dir, fs::path("/nonexistent/cmp/arms/timing") / name) << i;
  }
}

TEST(ComparisonPlan, GoldenModeRunsTheVariantOnlyAndTimesNothing) {
  const fs::path golden = fs::temp_directory_path() / "lockstep-plan-golden.loss";
  {
    std::ofstream out(golden);
    out << "1 6.25\n2 6.0\n3 5.5\n";
  }
  CompareRequest req = bf16_request();
  req.baseline = {};
  req.golden_file = golden.string();
  const auto p = plan_comparison(req);
  EXPECT_EQ(p.mode, "golden");
  ASSERT_EQ(p.alignment.size(), 1u);
  EXPECT_EQ(p.alignment[0].arm, "variant");
  EXPECT_EQ(p.alignment[0].role, "full");
  EXPECT_TRUE(p.timing.empty());
  EXPECT_EQ(p.golden_curve, (std::vector<double>{6.25, 6.0, 5.5}));
  EXPECT_TRUE(p.changes.empty());
  fs::remove(golden);
}

TEST(ComparisonPlan, ACheckStepPastTheLastStepIsAUsageErrorBeforeAnyRun) {
  CompareRequest req = bf16_request();
  req.check_step = 51;
  EXPECT_THROW(plan_comparison(req), UsageError);
  req.check_step = 50;
  EXPECT_EQ(plan_comparison(req).policy.check_step, 50);
}

}  // namespace
}  // namespace lockstep::compare
