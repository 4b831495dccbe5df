// The profiler's operator table: per-step medians over the profiled window (one slow step moves
// nothing), operators first seen mid-window, warm-up resets, and bounded memory for long windows.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/stats/bounded_samples.h"
#include "harness/train/profile/op_table.h"

using lockstep::stats::BoundedSamples;
using lockstep::train::OpTable;

namespace {

const lockstep::OpStat* find(const std::vector<lockstep::OpStat>& ops, const std::string& name) {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

}  // namespace

TEST(OpTable, OneSlowStepDoesNotMoveTheMedian) {
  OpTable t(5);
  // The measured case: log-softmax backward 19 ms in the first profiled step, ~0.7 ms after.
  const double lsm_ms[] = {19.2, 0.68, 0.60, 0.80, 0.70};
  for (double ms : lsm_ms) {
    t.add("aten::mm", 3e6, 3e6);
    t.add("aten::mm", 2e6, 2e6);  // two calls per step: 5 ms per step
    t.add("aten::_log_softmax_backward_data", ms * 1e6, ms * 1e6);
    t.step_done();
  }
  auto top = t.top(10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].name, "aten::mm");
  EXPECT_DOUBLE_EQ(top[0].calls, 2.0);
  EXPECT_DOUBLE_EQ(top[0].self_ms, 5.0);
  EXPECT_EQ(top[1].name, "aten::_log_softmax_backward_data");
  EXPECT_DOUBLE_EQ(top[1].self_ms, 0.70);  // the mean would say 4.40
  EXPECT_DOUBLE_EQ(top[1].calls, 1.0);
}

TEST(OpTable, AnOperatorFirstSeenMidWindowCountsZeroForTheStepsBefore) {
  OpTable t(4);
  for (int step = 0; step < 4; ++step) {
    t.add("aten::add", 1e6, 1e6);
    if (step >= 2) t.add("aten::late", 8e6, 9e6);  // steps 2 and 3 only
    t.step_done();
  }
  auto top = t.top(10);
  const auto* late = find(top, "aten::late");
  ASSERT_NE(late, nullptr);
  EXPECT_DOUBLE_EQ(late->self_ms, 4.0);   // median of {0, 0, 8, 8}
  EXPECT_DOUBLE_EQ(late->total_ms, 4.5);  // median of {0, 0, 9, 9}
  EXPECT_DOUBLE_EQ(late->calls, 0.5);
}

TEST(OpTable, ResetDropsTheWarmUpAndItsOperators) {
  OpTable t(2);
  t.add("aten::warmup_only", 50e6, 50e6);
  t.add("aten::mm", 40e6, 40e6);
  t.step_done();                  // whatever the warm-up closed, reset forgets it
  t.add("aten::mm", 40e6, 40e6);  // and an open step's counts go too
  t.reset();
  EXPECT_EQ(t.steps(), 0);
  EXPECT_TRUE(t.top(10).empty());  // nothing closed yet
  for (int step = 0; step < 2; ++step) {
    t.add("aten::mm", 2e6, 2e6);
    t.step_done();
  }
  auto top = t.top(10);
  ASSERT_EQ(top.size(), 1u);  // the warm-up's other operator is not listed
  EXPECT_EQ(top[0].name, "aten::mm");
  EXPECT_DOUBLE_EQ(top[0].self_ms, 2.0);
  EXPECT_DOUBLE_EQ(top[0].calls, 1.0);
}

TEST(OpTable, AnUnclosedStepIsNotCounted) {
  OpTable t;
  t.add("aten::mm", 1e6, 1e6);
  t.step_done();
  t.add("aten::mm", 100e6, 100e6);  // the run failed inside this step
  t.add("aten::partial", 1e6, 1e6);
  auto top = t.top(10);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_DOUBLE_EQ(top[0].self_ms, 1.0);
  EXPECT_DOUBLE_EQ(top[0].calls, 1.0);
}

TEST(OpTable, KeepsTheTopNAndEveryLockstepScope) {
  OpTable t;
  t.add("aten::a", 3e6, 3e6);
  t.add("aten::b", 2e6, 2e6);
  t.add("lockstep::attention", 0.01e6, 5e6);
  t.add("aten::c", 1e6, 1e6);
  t.step_done();
  auto top = t.top(2);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].name, "aten::a");
  EXPECT_EQ(top[1].name, "aten::b");
  EXPECT_EQ(top[2].name, "lockstep::attention");
  EXPECT_DOUBLE_EQ(top[2].total_ms, 5.0);
}

TEST(BoundedSamples, EmptyAndOne) {
  BoundedSamples s;
  EXPECT_TRUE(std::isnan(s.median()));
  s.add(7.5);
  EXPECT_DOUBLE_EQ(s.median(), 7.5);
  EXPECT_EQ(s.seen(), 1u);
  s.clear();
  EXPECT_EQ(s.seen(), 0u);
  EXPECT_TRUE(s.kept().empty());
}

TEST(BoundedSamples, KeepsEveryValueUpToTheBoundThenAUniformSubsample) {
  BoundedSamples s;
  const size_t n = BoundedSamples::kMax;
  for (size_t i = 0; i < n; ++i) s.add(static_cast<double>(i));
  ASSERT_EQ(s.kept().size(), n);  // all of them
  s.add(static_cast<double>(n));  // the bound: halve, keep steps 0, 2, 4, ..., n
  ASSERT_EQ(s.kept().size(), n / 2 + 1);
  for (size_t j = 0; j < s.kept().size(); ++j) EXPECT_EQ(s.kept()[j], 2.0 * j);
  // A long window: 10 * kMax steps stay within the bound, evenly spaced, median unbiased.
  for (size_t i = n + 1; i < 10 * n; ++i) s.add(static_cast<double>(i));
  EXPECT_EQ(s.seen(), 10 * n);
  EXPECT_LE(s.kept().size(), n);
  EXPECT_GE(s.kept().size(), n / 2);
  const double stride = s.kept()[1] - s.kept()[0];
  EXPECT_EQ(stride, 16.0);
  for (size_t j = 0; j < s.kept().size(); ++j) EXPECT_EQ(s.kept()[j], stride * j);
  EXPECT_NEAR(s.median(), 10.0 * n / 2, stride);
}
