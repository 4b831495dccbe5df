// [gate] repeats = "auto" (harness/compare/sequential.h): the planned looks, each look's level and
// the stopping rule, as pure functions (the runs themselves: cli_test's Compare.AutoRepeats*).
#include "harness/compare/sequential.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/vocab/gate_policy.h"

namespace lockstep::compare {
namespace {

constexpr Verdict P = Verdict::Pass, F = Verdict::Fail, I = Verdict::Inconclusive;

gate::Policy policy(const std::vector<std::string>& sets) {
  return gate::Policy::from(config::Config::parse("", "t.toml", sets));
}

TEST(SequentialLooks, FixedRepeatsAreOneLookAtAlpha) {
  const auto p = policy({});
  EXPECT_FALSE(p.auto_repeats);
  EXPECT_EQ(p.looks(), (std::vector<int64_t>{5}));
  EXPECT_DOUBLE_EQ(p.check_level(), 0.05);
  EXPECT_EQ(p.ci_percent(), "95%");
  const auto strict = policy({"gate.alpha=0.01", "gate.repeats=9"});
  EXPECT_EQ(strict.looks(), (std::vector<int64_t>{9}));
  EXPECT_EQ(strict.ci_percent(), "99%");  // the CIs' level follows alpha
}

TEST(SequentialLooks, AutoLooksEverySixRepeatsAndAtTheMaximum) {
  const auto p = policy({"gate.repeats=auto"});
  EXPECT_TRUE(p.auto_repeats);
  EXPECT_EQ(p.repeats, 6);  // the first look
  EXPECT_EQ(p.looks(), (std::vector<int64_t>{6, 12, 18, 24}));
  EXPECT_DOUBLE_EQ(p.check_level(), 0.05 / 4);
  EXPECT_EQ(p.ci_percent(), "98.75%");
  // A maximum off the grid is the last look; one at the first look leaves a single look.
  EXPECT_EQ(policy({"gate.repeats=auto", "gate.max_repeats=20"}).looks(),
            (std::vector<int64_t>{6, 12, 18, 20}));
  EXPECT_EQ(policy({"gate.repeats=auto", "gate.max_repeats=6"}).looks(), (std::vector<int64_t>{6}));
  EXPECT_DOUBLE_EQ(policy({"gate.repeats=auto", "gate.max_repeats=6"}).check_level(), 0.05);
  EXPECT_EQ(policy({"gate.repeats=auto", "gate.max_repeats=60"}).looks().size(), 10u);
  EXPECT_THROW(policy({"gate.repeats=auto", "gate.max_repeats=5"}), config::ConfigError);
  const std::string d = p.describe();
  EXPECT_NE(d.find("looks at 6, 12, 18, 24 repeats per arm"), std::string::npos) << d;
  EXPECT_NE(d.find("98.75% CIs (bootstrap"), std::string::npos) << d;
}

TEST(SequentialStop, StopsWhenEveryCheckIsDecidedOrOneFails) {
  EXPECT_EQ(stop_reason({P, P}, 0, 4, 10, 10, 30), "decisive");
  EXPECT_EQ(stop_reason({P, F}, 0, 4, 10, 10, 30), "decisive");
  // A failed check decides the verdict whatever the others would become.
  EXPECT_EQ(stop_reason({I, F}, 1, 4, 10, 10, 30), "decisive");
  EXPECT_EQ(stop_reason({I, P}, 1, 4, 10, 10, 30), "");
  EXPECT_EQ(stop_reason({}, 0, 4, 10, 10, 30), "decisive");  // nothing left to decide
}

TEST(SequentialStop, StopsAtTheLastLookOrBeforeTheBudgetRunsOut) {
  EXPECT_EQ(stop_reason({I, P}, 3, 4, 10, 10, 30), "max_repeats");
  EXPECT_EQ(stop_reason({I, P}, 0, 1, 10, 10, 30), "max_repeats");
  // 25 min so far and the next look's repeats would take 6 more: past 30 minutes.
  EXPECT_EQ(stop_reason({I, P}, 1, 4, 25 * 60, 6 * 60, 30), "max_minutes");
  EXPECT_EQ(stop_reason({I, P}, 1, 4, 25 * 60, 4 * 60, 30), "");
  // A decisive look stops as decisive even past the budget.
  EXPECT_EQ(stop_reason({F, P}, 1, 4, 40 * 60, 6 * 60, 30), "decisive");
}

}  // namespace
}  // namespace lockstep::compare
