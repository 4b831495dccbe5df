// Unit tests for harness/stats: values (numpy / scipy conventions, computed by hand or by brute
// force), every documented edge case, and determinism of the bootstraps.
#include "harness/stats/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace lockstep::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Groups = std::vector<std::vector<double>>;

double Mean(const std::vector<double>& v) {
  return mean(v);
}
double Median(const std::vector<double>& v) {
  return median(v);
}
double P99(const std::vector<double>& v) {
  return percentile(v, 99);
}

// --- descriptive statistics ---------------------------------------------------------------------

TEST(StatsMean, Values) {
  EXPECT_TRUE(std::isnan(mean({})));
  EXPECT_DOUBLE_EQ(mean({7.5}), 7.5);
  EXPECT_DOUBLE_EQ(mean({1, 2}), 1.5);
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 4}), 2.5);
  EXPECT_DOUBLE_EQ(mean({3, 3, 3}), 3);
  // Large offset: exact with the second (residual) pass.
  EXPECT_EQ(mean({1e9 + 1, 1e9 + 2, 1e9 + 3}), 1e9 + 2);
  EXPECT_EQ(mean({1, kInf}), kInf);
}

TEST(StatsMedian, Values) {
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_DOUBLE_EQ(median({4}), 4);
  EXPECT_DOUBLE_EQ(median({3, 1}), 2);                       // n=2: mean of both
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);                    // odd, unsorted
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);               // even, unsorted
  EXPECT_DOUBLE_EQ(median({2, 2, 2, 9}), 2);                 // ties
  EXPECT_DOUBLE_EQ(median({1, 2, 2, 9}), 2);                 // ties across the middle
  EXPECT_DOUBLE_EQ(median({6, 6, 6, 6}), 6);                 // all equal
  EXPECT_DOUBLE_EQ(median({1e308, 1e308 * 1.5}), 1.25e308);  // no overflow
  EXPECT_TRUE(std::isnan(median({1, kNaN, 3})));
}

TEST(StatsStddev, Values) {
  EXPECT_TRUE(std::isnan(stddev({})));
  EXPECT_TRUE(std::isnan(stddev({5})));
  EXPECT_DOUBLE_EQ(stddev({1, 3}), std::sqrt(2.0));  // mean 2, (1+1)/1 = 2
  EXPECT_DOUBLE_EQ(stddev({4, 4, 4}), 0);
  // mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32, /7.
  EXPECT_DOUBLE_EQ(stddev({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7));
  EXPECT_DOUBLE_EQ(stddev({1e9 + 1, 1e9 + 2, 1e9 + 3}), 1);  // two-pass: no cancellation
}

// Expected values are numpy.percentile(x, q) (linear, type 7): h = (n-1)*q/100,
// x[floor(h)] + frac(h) * (x[floor(h)+1] - x[floor(h)]).
TEST(StatsPercentile, NumpyType7) {
  const std::vector<double> x{4, 1, 3, 2};  // sorted 1 2 3 4, h = 3q/100
  EXPECT_DOUBLE_EQ(percentile(x, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(x, 25), 1.75);  // h=0.75
  EXPECT_DOUBLE_EQ(percentile(x, 50), 2.5);   // h=1.5
  EXPECT_DOUBLE_EQ(percentile(x, 75), 3.25);  // h=2.25
  EXPECT_DOUBLE_EQ(percentile(x, 90), 3.7);   // h=2.7
  EXPECT_DOUBLE_EQ(percentile(x, 100), 4);
  const std::vector<double> y{15, 20, 35, 40, 50};  // h = 4q/100
  EXPECT_DOUBLE_EQ(percentile(y, 5), 16);           // h=0.2: 15 + 0.2*5
  EXPECT_DOUBLE_EQ(percentile(y, 30), 23);          // h=1.2: 20 + 0.2*15
  EXPECT_DOUBLE_EQ(percentile(y, 40), 29);          // h=1.6: 20 + 0.6*15
  EXPECT_DOUBLE_EQ(percentile(y, 50), 35);          // h=2
  EXPECT_DOUBLE_EQ(percentile(y, 99), 49.6);        // h=3.96: 40 + 0.96*10
}

TEST(StatsPercentile, EdgeCases) {
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
  EXPECT_DOUBLE_EQ(percentile({7}, 0), 7);
  EXPECT_DOUBLE_EQ(percentile({7}, 37), 7);
  EXPECT_DOUBLE_EQ(percentile({7}, 100), 7);
  EXPECT_DOUBLE_EQ(percentile({3, 1}, 25), 1.5);  // n=2: h=0.25
  EXPECT_DOUBLE_EQ(percentile({3, 1}, 50), 2);
  EXPECT_DOUBLE_EQ(percentile({2, 2, 2, 5}, 50), 2);     // ties: h=1.5 between 2 and 2
  EXPECT_DOUBLE_EQ(percentile({2, 2, 2, 5}, 75), 2.75);  // h=2.25: 2 + 0.25*3
  EXPECT_DOUBLE_EQ(percentile({9, 9, 9}, 33), 9);        // all equal
  EXPECT_EQ(percentile({1, kInf, kInf}, 90), kInf);      // equal infinities, no inf-inf
  EXPECT_TRUE(std::isnan(percentile({1, kNaN}, 50)));
  EXPECT_THROW(percentile({1, 2}, -0.1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 100.5), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, kNaN), std::invalid_argument);
  EXPECT_THROW(percentile({}, 101), std::invalid_argument);  // checked before emptiness
}

TEST(StatsMad, Values) {
  EXPECT_TRUE(std::isnan(mad({})));
  EXPECT_DOUBLE_EQ(mad({42}), 0);
  EXPECT_DOUBLE_EQ(mad({1, 3}), 1);             // median 2, deviations 1 1
  EXPECT_DOUBLE_EQ(mad({5, 5, 5, 5}), 0);       // all equal
  EXPECT_DOUBLE_EQ(mad({1, 2, 3, 4, 100}), 1);  // median 3, deviations 2 1 0 1 97
  EXPECT_DOUBLE_EQ(mad({1, 2, 3, 4}), 1);       // median 2.5, deviations 1.5 .5 .5 1.5
  EXPECT_DOUBLE_EQ(mad({1, 1, 1, 10, 20}), 0);  // ties: more than half equal to the median
  EXPECT_TRUE(std::isnan(mad({1, kNaN, 2})));
}

TEST(StatsAllFinite, Values) {
  EXPECT_TRUE(all_finite({}));
  EXPECT_TRUE(all_finite({1, -2, 0}));
  EXPECT_FALSE(all_finite({1, kNaN}));
  EXPECT_FALSE(all_finite({kInf}));
  EXPECT_FALSE(all_finite({1, -kInf}));
}

// --- RNG and intervals --------------------------------------------------------------------------

TEST(StatsSplitMix64, ReferenceSequence) {
  // Reference outputs of splitmix64 (Vigna's splitmix64.c) for seed 1234567.
  SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next(), 9817491932198370423ULL);
  EXPECT_EQ(rng.next(), 4593380528125082431ULL);
  EXPECT_EQ(rng.next(), 16408922859458223821ULL);
  SplitMix64 r2(0);
  EXPECT_EQ(r2.next(), 16294208416658607535ULL);
  EXPECT_EQ(r2.index(10), 7960286522194355700ULL % 10);
}

TEST(StatsInterval, Valid) {
  EXPECT_FALSE(Interval{}.valid());
  EXPECT_TRUE((Interval{1, 2}.valid()));
  EXPECT_TRUE((Interval{2, 2}.valid()));
  EXPECT_FALSE((Interval{3, 2}.valid()));
  EXPECT_FALSE((Interval{1, kInf}.valid()));
  EXPECT_FALSE((Interval{kNaN, 2}.valid()));
}

TEST(StatsPctChange, Values) {
  const TwoSampleStat pct = pct_change(Mean);
  EXPECT_NEAR(pct({100, 100}, {110, 110}), 10, 1e-12);
  EXPECT_NEAR(pct({200}, {150}), -25, 1e-12);
  EXPECT_DOUBLE_EQ(pct({3, 5}, {5, 3}), 0);
  EXPECT_TRUE(std::isnan(pct({0}, {1})));  // f(a) == 0
  EXPECT_TRUE(std::isnan(pct({}, {1})));   // f(a) NaN
  EXPECT_TRUE(std::isnan(pct({1}, {})));   // f(b) NaN
  EXPECT_THROW(pct_change(nullptr), std::invalid_argument);
}

// --- bootstrap ----------------------------------------------------------------------------------

// 100 / 110 plus zero-mean noise: the sample means are exactly 100 and 110, the true change 10%.
std::vector<double> Noisy(double center, int n, int phase) {
  static const double kNoise[4] = {-0.3, -0.1, 0.1, 0.3};
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center + kNoise[(i + phase) % 4]);
  return v;
}

TEST(StatsBootstrap, DeterministicForSeed) {
  const auto a = Noisy(100, 24, 0), b = Noisy(110, 28, 1);
  const Interval c1 = bootstrap_ci(a, b, pct_change(Mean), 500, 0.95, 42);
  const Interval c2 = bootstrap_ci(a, b, pct_change(Mean), 500, 0.95, 42);
  const Interval c3 = bootstrap_ci(a, b, pct_change(Mean), 500, 0.95, 43);
  ASSERT_TRUE(c1.valid());
  EXPECT_EQ(c1.lo, c2.lo);
  EXPECT_EQ(c1.hi, c2.hi);
  EXPECT_TRUE(c1.lo != c3.lo || c1.hi != c3.hi);
}

TEST(StatsBootstrap, ClearShiftCoversTrueChangeAndExcludesZero) {
  const auto a = Noisy(100, 30, 0), b = Noisy(110, 30, 2);
  for (const auto& f : {Mean, Median}) {
    const Interval ci = bootstrap_ci(a, b, pct_change(f), 2000, 0.95, 7);
    ASSERT_TRUE(ci.valid());
    EXPECT_LE(ci.lo, 10);
    EXPECT_GE(ci.hi, 10);
    EXPECT_GT(ci.lo, 9.5);  // noise of +/-0.3 cannot move the change by half a percent
    EXPECT_LT(ci.hi, 10.5);
    EXPECT_GT(ci.lo, 0);
  }
  // Reversed: about -9.09% (100/110 - 1), excluding zero from below.
  const Interval rev = bootstrap_ci(b, a, pct_change(Mean), 2000, 0.95, 7);
  ASSERT_TRUE(rev.valid());
  EXPECT_LE(rev.lo, 100.0 * (100.0 / 110 - 1));
  EXPECT_GE(rev.hi, 100.0 * (100.0 / 110 - 1));
  EXPECT_LT(rev.hi, 0);
}

TEST(StatsBootstrap, IdenticalSamplesContainZero) {
  std::vector<double> a;
  for (int i = 0; i < 20; ++i) a.push_back(100 + i % 7);
  for (const auto& f : {Mean, Median, P99}) {
    const Interval ci = bootstrap_ci(a, a, pct_change(f), 2000, 0.95, 11);
    ASSERT_TRUE(ci.valid());
    EXPECT_LT(ci.lo, 0);
    EXPECT_GT(ci.hi, 0);
  }
}

TEST(StatsBootstrap, LevelNestsIntervals) {
  const auto a = Noisy(100, 16, 0), b = Noisy(101, 16, 3);
  const Interval wide = bootstrap_ci(a, b, pct_change(Mean), 1000, 0.99, 5);
  const Interval narrow = bootstrap_ci(a, b, pct_change(Mean), 1000, 0.5, 5);
  ASSERT_TRUE(wide.valid());
  ASSERT_TRUE(narrow.valid());
  EXPECT_LT(wide.lo, narrow.lo);
  EXPECT_GT(wide.hi, narrow.hi);
}

TEST(StatsBootstrap, EndpointsArePercentilesOfReplicates) {
  // A statistic that returns 1, 2, ..., 101 on successive resamples: the 80% interval is the
  // type-7 10th and 90th percentiles of 1..101, i.e. 11 and 91.
  int calls = 0;
  const TwoSampleStat counter = [&calls](const std::vector<double>&, const std::vector<double>&) {
    return static_cast<double>(++calls);
  };
  const Interval ci = bootstrap_ci({1}, {2}, counter, 101, 0.8, 1);
  EXPECT_EQ(calls, 101);
  EXPECT_NEAR(ci.lo, 11, 1e-9);
  EXPECT_NEAR(ci.hi, 91, 1e-9);
}

TEST(StatsBootstrap, NonFiniteReplicates) {
  // NaN, +inf or -inf on every third resample: a minority, dropped (kept, they would be the
  // interval's ends); the rest are 0 -> the interval is [0, 0].
  int calls = 0;
  const TwoSampleStat third = [&calls](const std::vector<double>&, const std::vector<double>&) {
    const int c = ++calls;
    if (c % 3 != 0) return 0.0;
    return c % 9 == 0 ? kNaN : (c % 9 == 3 ? kInf : -kInf);
  };
  const Interval ok = bootstrap_ci({1, 2}, {3, 4}, third, 300, 0.95, 1);
  ASSERT_TRUE(ok.valid());
  EXPECT_EQ(calls, 300);
  EXPECT_EQ(ok.lo, 0);
  EXPECT_EQ(ok.hi, 0);
  // Infinite on two of three: a majority -> invalid.
  calls = 0;
  const TwoSampleStat most = [&calls](const std::vector<double>&, const std::vector<double>&) {
    return ++calls % 3 == 0 ? 0.0 : kInf;
  };
  EXPECT_FALSE(bootstrap_ci({1, 2}, {3, 4}, most, 300, 0.95, 1).valid());
  // f(a) == 0 on every resample.
  EXPECT_FALSE(bootstrap_ci({0, 0}, {1, 2}, pct_change(Mean), 100, 0.95, 1).valid());
}

TEST(StatsBootstrap, EdgeCases) {
  const TwoSampleStat pct = pct_change(Mean);
  EXPECT_FALSE(bootstrap_ci({}, {1, 2}, pct, 100, 0.95, 1).valid());
  EXPECT_FALSE(bootstrap_ci({1, 2}, {}, pct, 100, 0.95, 1).valid());
  // n=1 per side: every resample is the same pair -> a point.
  const Interval point = bootstrap_ci({100}, {110}, pct, 100, 0.95, 1);
  ASSERT_TRUE(point.valid());
  EXPECT_EQ(point.lo, point.hi);
  EXPECT_NEAR(point.lo, 10, 1e-12);
  // All-equal samples: also a point.
  const Interval flat = bootstrap_ci({5, 5, 5}, {5, 5}, pct, 100, 0.95, 1);
  ASSERT_TRUE(flat.valid());
  EXPECT_EQ(flat.lo, 0);
  EXPECT_EQ(flat.hi, 0);
  EXPECT_THROW(bootstrap_ci({1}, {2}, pct, 0, 0.95, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_ci({1}, {2}, pct, 100, 0, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_ci({1}, {2}, pct, 100, 1, 1), std::invalid_argument);
  EXPECT_THROW(bootstrap_ci({1}, {2}, nullptr, 100, 0.9, 1), std::invalid_argument);
}

// Five repeats whose levels differ (-2..+2 around 100) with 30 correlated steps each (0..0.4).
Groups Repeats(double scale) {
  Groups g;
  for (int r = 0; r < 5; ++r) {
    std::vector<double> steps;
    for (int j = 0; j < 30; ++j) steps.push_back(scale * (98 + r + 0.1 * (j % 5)));
    g.push_back(steps);
  }
  return g;
}

std::vector<double> Pool(const Groups& g) {
  std::vector<double> out;
  for (const auto& v : g) out.insert(out.end(), v.begin(), v.end());
  return out;
}

TEST(StatsBootstrapGrouped, ShiftOfP99) {
  const Groups a = Repeats(1.0), b = Repeats(1.1);
  const TwoSampleStat pct = pct_change(P99);
  const Interval ci = bootstrap_ci_grouped(a, b, pct, 2000, 0.95, 3);
  ASSERT_TRUE(ci.valid());
  EXPECT_LE(ci.lo, 10);
  EXPECT_GE(ci.hi, 10);
  // Bounds of any resample: P99 of a in [98.4, 102.4], of b in 1.1 * that.
  EXPECT_GE(ci.lo, 100 * (1.1 * 98.4 / 102.4 - 1) - 1e-9);
  EXPECT_LE(ci.hi, 100 * (1.1 * 102.4 / 98.4 - 1) + 1e-9);
  EXPECT_GT(ci.lo, 0);
  // Same seed, same interval.
  const Interval again = bootstrap_ci_grouped(a, b, pct, 2000, 0.95, 3);
  EXPECT_EQ(ci.lo, again.lo);
  EXPECT_EQ(ci.hi, again.hi);
}

TEST(StatsBootstrapGrouped, WiderThanPooledWhenRepeatsDiffer) {
  // Between-repeat variation dominates; resampling steps as if independent understates it.
  const Groups a = Repeats(1.0), b = Repeats(1.1);
  const TwoSampleStat pct = pct_change(P99);
  const Interval grouped = bootstrap_ci_grouped(a, b, pct, 2000, 0.95, 9);
  const Interval pooled = bootstrap_ci(Pool(a), Pool(b), pct, 2000, 0.95, 9);
  ASSERT_TRUE(grouped.valid());
  ASSERT_TRUE(pooled.valid());
  EXPECT_GT(grouped.hi - grouped.lo, 2 * (pooled.hi - pooled.lo));
}

TEST(StatsBootstrapGrouped, EdgeCases) {
  const TwoSampleStat pct = pct_change(Mean);
  EXPECT_FALSE(bootstrap_ci_grouped({}, {{1}}, pct, 100, 0.95, 1).valid());
  EXPECT_FALSE(bootstrap_ci_grouped({{1}}, {}, pct, 100, 0.95, 1).valid());
  EXPECT_FALSE(bootstrap_ci_grouped({{}, {}}, {{1}}, pct, 100, 0.95, 1).valid());
  // One group per side: every resample pools the same data -> stat on the data.
  const Interval one = bootstrap_ci_grouped({{100, 102}}, {{110, 112}}, pct, 100, 0.95, 1);
  ASSERT_TRUE(one.valid());
  EXPECT_EQ(one.lo, one.hi);
  EXPECT_NEAR(one.lo, 100 * (111.0 / 101 - 1), 1e-12);
  // An empty group among others only makes some pooled resamples smaller (or empty -> NaN stat,
  // here on (1/2)^2 = a quarter of the resamples: a minority).
  const Interval some = bootstrap_ci_grouped({{}, {100, 100}}, {{110}}, pct, 400, 0.95, 1);
  ASSERT_TRUE(some.valid());
  EXPECT_NEAR(some.lo, 10, 1e-12);
  EXPECT_NEAR(some.hi, 10, 1e-12);
  EXPECT_THROW(bootstrap_ci_grouped({{1}}, {{2}}, pct, 100, 1.5, 1), std::invalid_argument);
}

// --- Mann-Whitney U -----------------------------------------------------------------------------

TEST(StatsMannWhitney, ExactCompleteSeparation) {
  // U = 0; exactly 1 of C(10,5) = 252 orderings has U <= 0, so p = 2/252.
  const MannWhitney r = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 0);
  EXPECT_DOUBLE_EQ(r.p_two_sided, 2.0 / 252);
  const MannWhitney s = mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_EQ(s.u, 25);
  EXPECT_DOUBLE_EQ(s.p_two_sided, 2.0 / 252);
}

TEST(StatsMannWhitney, ExactMixed) {
  // a = 1 2 4 7 vs b = 3 5 6 8 9 10: a-wins 0+0+1+3 = 4. Brute force over all C(10,4) = 210
  // splits: 12 have U <= 4, so p = 2*12/210.
  const MannWhitney r = mann_whitney_u({7, 1, 4, 2}, {3, 10, 5, 6, 8, 9});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 4);
  EXPECT_DOUBLE_EQ(r.p_two_sided, 24.0 / 210);
}

TEST(StatsMannWhitney, ExactSmallest) {
  // n=1 each: U is 0 or 1 with probability 1/2 each -> p = min(1, 2*1/2) = 1.
  const MannWhitney r = mann_whitney_u({1.5}, {2.5});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u, 0);
  EXPECT_DOUBLE_EQ(r.p_two_sided, 1);
  // Perfectly balanced: a = 1 4 6 9, b = 2 3 5 7 8, U = 10 = mean -> p = 1 (capped).
  const MannWhitney m = mann_whitney_u({1, 4, 6, 9}, {2, 3, 5, 7, 8});
  EXPECT_TRUE(m.exact);
  EXPECT_EQ(m.u, 10);
  EXPECT_DOUBLE_EQ(m.p_two_sided, 1);
}

TEST(StatsMannWhitney, ExactThresholdIs20PerSample) {
  std::vector<double> a20, b20;
  for (int i = 0; i < 20; ++i) a20.push_back(i), b20.push_back(20 + i);
  const MannWhitney at = mann_whitney_u(a20, b20);
  EXPECT_TRUE(at.exact);
  EXPECT_EQ(at.u, 0);
  EXPECT_DOUBLE_EQ(at.p_two_sided, 2.0 / 137846528820.0);  // 2 / C(40,20)
  a20.push_back(-1);
  const MannWhitney over = mann_whitney_u(a20, b20);
  EXPECT_FALSE(over.exact);
  EXPECT_EQ(over.u, 0);
}

TEST(StatsMannWhitney, NormalApproximationWithTies) {
  // a = 1 2 2 3, b = 2 3 4 5 6 (n_a=4, n_b=5, N=9).
  // Pooled midranks: 1->1, the three 2s -> (2+3+4)/3 = 3, the two 3s -> (5+6)/2 = 5.5, 4 5 6 -> 7
  // 8 9. R_a = 1 + 3 + 3 + 5.5 = 12.5, U = R_a - 4*5/2 = 2.5 (pairs: 0 + 0.5 + 0.5 + 1.5). mu =
  // 4*5/2 = 10. Tie term sum(t^3 - t) = (27-3) + (8-2) = 30. var = n_a n_b / 12 * ((N+1) -
  // 30/(N(N-1))) = 20/12 * (10 - 30/72) = 15.972222... z = (|2.5 - 10| - 0.5) / sqrt(15.972222) = 7
  // / 3.996526 = 1.751521 p = 2 * (1 - Phi(1.751521)) = erfc(1.751521 / sqrt 2) = 0.0798562 (scipy
  // asymptotic agrees).
  const MannWhitney r = mann_whitney_u({1, 2, 2, 3}, {2, 3, 4, 5, 6});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 2.5);
  EXPECT_NEAR(r.p_two_sided, 0.07985619377351647, 1e-12);
}

TEST(StatsMannWhitney, NormalApproximationLargeSamples) {
  std::vector<double> a, b, even, odd;
  for (int i = 0; i < 25; ++i) a.push_back(i), b.push_back(25 + i);
  // U = 0, mu = 312.5, var = 625/12 * 51 = 2656.25, z = 312 / 51.5388 = 6.05369.
  const MannWhitney sep = mann_whitney_u(a, b);
  EXPECT_FALSE(sep.exact);
  EXPECT_EQ(sep.u, 0);
  EXPECT_NEAR(sep.p_two_sided / 1.4156562248495634e-09, 1, 1e-9);
  // Interleaved 0 2 4 ... vs 1 3 5 ...: U = 300, z = (12.5 - 0.5) / 51.5388 = 0.232834.
  for (int i = 0; i < 50; i += 2) even.push_back(i), odd.push_back(i + 1);
  const MannWhitney mix = mann_whitney_u(even, odd);
  EXPECT_EQ(mix.u, 300);
  EXPECT_NEAR(mix.p_two_sided, 0.8158901548607471, 1e-12);
}

TEST(StatsMannWhitney, SwappingSamples) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases{
      {{1, 2, 4, 7}, {3, 5, 6, 8, 9, 10}},  // exact
      {{1, 2, 2, 3}, {2, 3, 4, 5, 6}},      // ties
      {{3.5, 1, 8, 8, 2}, {8, 0.5, 4, 4}},  // ties across and within samples
  };
  for (const auto& [a, b] : cases) {
    const MannWhitney ab = mann_whitney_u(a, b), ba = mann_whitney_u(b, a);
    EXPECT_EQ(ab.exact, ba.exact);
    EXPECT_EQ(ba.u, static_cast<double>(a.size() * b.size()) - ab.u);
    EXPECT_EQ(ab.p_two_sided, ba.p_two_sided);
  }
}

TEST(StatsMannWhitney, TiesWithinOneSampleUseTheApproximation) {
  // No tie between the samples, but 1 1 ties within a: the normal approximation.
  // U = 0, N = 4, tie term 6, var = 4/12 * (5 - 6/12) = 1.5, z = (2 - 0.5)/sqrt(1.5).
  const MannWhitney r = mann_whitney_u({1, 1}, {2, 3});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.u, 0);
  EXPECT_NEAR(r.p_two_sided, std::erfc(1.5 / std::sqrt(1.5) / std::sqrt(2.0)), 1e-15);
}

TEST(StatsMannWhitney, EdgeCases) {
  const MannWhitney none = mann_whitney_u({}, {});
  EXPECT_TRUE(std::isnan(none.u));
  EXPECT_TRUE(std::isnan(none.p_two_sided));
  EXPECT_FALSE(none.exact);
  EXPECT_TRUE(std::isnan(mann_whitney_u({}, {1, 2}).p_two_sided));
  EXPECT_TRUE(std::isnan(mann_whitney_u({1, 2}, {}).p_two_sided));
  EXPECT_TRUE(std::isnan(mann_whitney_u({1, kNaN}, {2, 3}).p_two_sided));
  // All equal: U = n_a n_b / 2, zero variance, p = 1.
  const MannWhitney flat = mann_whitney_u({5, 5, 5}, {5, 5});
  EXPECT_FALSE(flat.exact);
  EXPECT_EQ(flat.u, 3);
  EXPECT_EQ(flat.p_two_sided, 1);
  // n=2 each, separated: 1 of C(4,2) = 6 orderings at each extreme -> p = 2/6.
  const MannWhitney two = mann_whitney_u({1, 2}, {3, 4});
  EXPECT_TRUE(two.exact);
  EXPECT_DOUBLE_EQ(two.p_two_sided, 2.0 / 6);
}

// --- rolling robust z ---------------------------------------------------------------------------

TEST(StatsRollingRobustZ, Values) {
  const double s = 1.4826;
  // i=3: window 1 2 3 (median 2, MAD 1); i=4: 1 2 3 4 (2.5, MAD 1); i=5: 1..5 (3, MAD 1).
  const auto z = rolling_robust_z({1, 2, 3, 4, 5, 20}, 5);
  ASSERT_EQ(z.size(), 6u);
  EXPECT_TRUE(std::isnan(z[0]));
  EXPECT_TRUE(std::isnan(z[1]));
  EXPECT_TRUE(std::isnan(z[2]));
  EXPECT_DOUBLE_EQ(z[3], 2 / s);
  EXPECT_DOUBLE_EQ(z[4], 2.5 / s);
  EXPECT_DOUBLE_EQ(z[5], 17 / s);
  // Window slides: i=4 sees 2 3 100 (median 3, deviations 1 0 97 -> MAD 1).
  const auto w = rolling_robust_z({1, 2, 3, 100, 4}, 3);
  EXPECT_DOUBLE_EQ(w[3], 98 / s);  // window 1 2 3
  EXPECT_DOUBLE_EQ(w[4], 1 / s);
}

TEST(StatsRollingRobustZ, ZeroMad) {
  const auto z = rolling_robust_z({10, 10, 10, 10, 11, 9}, 4);
  EXPECT_TRUE(std::isnan(z[2]));
  EXPECT_EQ(z[3], 0);     // equals the median
  EXPECT_EQ(z[4], kInf);  // above a flat window
  // i=5: window 10 10 10 11, median 10, MAD 0 -> below is -inf.
  EXPECT_EQ(z[5], -kInf);
}

TEST(StatsRollingRobustZ, EdgeCases) {
  EXPECT_TRUE(rolling_robust_z({}, 10).empty());
  for (double v : rolling_robust_z({1, 2, 3, 4, 5}, 2)) EXPECT_TRUE(std::isnan(v));  // window < 3
  for (double v : rolling_robust_z({1, 2, 3}, 10)) EXPECT_TRUE(std::isnan(v));       // n < 4
  // Non-finite predecessors are left out; a NaN point has NaN z.
  const auto z = rolling_robust_z({1, kNaN, 2, 3, kInf, 4, kNaN}, 10);
  EXPECT_TRUE(std::isnan(z[3]));       // only 2 finite predecessors (1, 2)
  EXPECT_EQ(z[4], kInf);               // predecessors 1 2 3 (MAD 1): inf stays inf
  EXPECT_DOUBLE_EQ(z[5], 2 / 1.4826);  // predecessors 1 2 3
  EXPECT_TRUE(std::isnan(z[6]));
}

// ---- power and multiplicity (the gate's MDE and Holm correction) -------------------------------

TEST(StatsNormalQuantile, ValuesAgainstTheTableAndTails) {
  EXPECT_NEAR(normal_quantile(0.975), 1.9599639845400536, 1e-12);
  EXPECT_NEAR(normal_quantile(0.8), 0.8416212335729144, 1e-12);
  EXPECT_NEAR(normal_quantile(0.99), 2.3263478740408408, 1e-12);
  EXPECT_EQ(normal_quantile(0.5), 0.0);
  EXPECT_NEAR(normal_quantile(0.02425), -1.9729610513118845, 1e-12);  // the region boundary
  EXPECT_NEAR(normal_quantile(1e-10), -6.361340902404056, 1e-9);       // deep lower tail
  EXPECT_NEAR(normal_quantile(0.2), -normal_quantile(0.8), 1e-14);     // symmetric
}

TEST(StatsNormalQuantile, EdgeCases) {
  EXPECT_EQ(normal_quantile(0), -kInf);
  EXPECT_EQ(normal_quantile(1), kInf);
  EXPECT_TRUE(std::isnan(normal_quantile(-0.1)));
  EXPECT_TRUE(std::isnan(normal_quantile(1.5)));
  EXPECT_TRUE(std::isnan(normal_quantile(kNaN)));
}

TEST(StatsPooledCv, EachArmRelativeToItsOwnMean) {
  // cv 0.1 in each arm: 10%, although the arms' means differ by a factor 2 (not noise).
  EXPECT_NEAR(pooled_cv_pct({9, 10, 11}, {18, 20, 22}), 10.0, 1e-12);
  // Pooled by degrees of freedom: sqrt((2 * 0.01 + 3 * 0) / 5) = 6.3246%.
  EXPECT_NEAR(pooled_cv_pct({9, 10, 11}, {20, 20, 20, 20}), 100 * std::sqrt(0.004), 1e-12);
  EXPECT_EQ(pooled_cv_pct({5, 5}, {7, 7, 7}), 0.0);  // zero variance
}

TEST(StatsPooledCv, EdgeCases) {
  EXPECT_TRUE(std::isnan(pooled_cv_pct({}, {1, 2})));
  EXPECT_TRUE(std::isnan(pooled_cv_pct({1}, {1, 2})));  // n = 1: no spread to measure
  EXPECT_TRUE(std::isnan(pooled_cv_pct({1, 2}, {1})));
  EXPECT_TRUE(std::isnan(pooled_cv_pct({1, kNaN}, {1, 2})));
  EXPECT_TRUE(std::isnan(pooled_cv_pct({1, 2}, {1, kInf})));
  EXPECT_TRUE(std::isnan(pooled_cv_pct({-1, 1}, {1, 2})));  // mean 0
}

TEST(StatsMinDetectableEffect, HandComputedValues) {
  // The reference's example: sigma 3%, 5 repeats per arm, alpha 0.05, power 0.8 ->
  // (1.959964 + 0.841621) * 3 * sqrt(2/5) = 2.801585 * 1.897367 = 5.3156%.
  EXPECT_NEAR(min_detectable_effect(3, 5, 5, 0.05, 0.8), 5.315634208977956, 1e-9);
  // The factor alone (sigma 1, sqrt(1/na + 1/nb) = 1 at na = nb = 2).
  EXPECT_NEAR(min_detectable_effect(1, 2, 2, 0.05, 0.8), 2.801585218112968, 1e-9);
  // Unequal arms, another level and power: (2.575829 + 1.281552) * sqrt(1/4 + 1/6).
  EXPECT_NEAR(min_detectable_effect(1, 4, 6, 0.01, 0.9), 2.4899286443297033, 1e-9);
  // Four times the repeats halve it.
  EXPECT_NEAR(min_detectable_effect(3, 20, 20, 0.05, 0.8),
              min_detectable_effect(3, 5, 5, 0.05, 0.8) / 2, 1e-12);
  EXPECT_EQ(min_detectable_effect(0, 5, 5, 0.05, 0.8), 0.0);  // zero noise
}

TEST(StatsMinDetectableEffect, EdgeCases) {
  EXPECT_TRUE(std::isnan(min_detectable_effect(kNaN, 5, 5, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(min_detectable_effect(kInf, 5, 5, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(min_detectable_effect(-1, 5, 5, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(min_detectable_effect(3, 1, 5, 0.05, 0.8)));  // n = 1
  EXPECT_TRUE(std::isnan(min_detectable_effect(3, 5, 0, 0.05, 0.8)));  // empty
  EXPECT_TRUE(std::isnan(min_detectable_effect(3, 5, 5, 0, 0.8)));
  EXPECT_TRUE(std::isnan(min_detectable_effect(3, 5, 5, 0.05, 1)));
  EXPECT_TRUE(std::isnan(min_detectable_effect(3, 5, 5, kNaN, 0.8)));
}

// Reference values: scipy 1.10 (stats.t.cdf / stats.t.ppf / stats.ttest_1samp).
TEST(StatsStudentT, MatchesScipy) {
  EXPECT_NEAR(student_t_cdf(2.0, 5), 0.9490302605850709, 1e-11);
  EXPECT_NEAR(student_t_cdf(-1.3, 2.5), 0.15024339463535397, 1e-11);  // fractional df
  EXPECT_NEAR(student_t_cdf(0.7, 1), 0.6944001122142147, 1e-11);      // Cauchy
  EXPECT_NEAR(student_t_cdf(3.1, 40), 0.9982315457949792, 1e-11);
  EXPECT_EQ(student_t_cdf(0, 7), 0.5);
  EXPECT_NEAR(student_t_quantile(0.975, 4), 2.7764451051977987, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 9), 2.2621571627409915, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.99375, 5), 3.810004699845396, 1e-9);  // auto's 4 looks
  EXPECT_NEAR(student_t_quantile(0.8, 5), 0.919543780236326, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.001, 3), -10.214531852405337, 1e-8);
  // Large df tends to the normal.
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), normal_quantile(0.975), 1e-6);
}

TEST(StatsStudentT, EdgeCases) {
  EXPECT_EQ(student_t_cdf(kInf, 3), 1.0);
  EXPECT_EQ(student_t_cdf(-kInf, 3), 0.0);
  EXPECT_TRUE(std::isnan(student_t_cdf(kNaN, 3)));
  EXPECT_TRUE(std::isnan(student_t_cdf(1, 0)));
  EXPECT_TRUE(std::isnan(student_t_cdf(1, -2)));
  EXPECT_EQ(student_t_quantile(0, 3), -kInf);
  EXPECT_EQ(student_t_quantile(1, 3), kInf);
  EXPECT_EQ(student_t_quantile(0.5, 3), 0.0);
  EXPECT_TRUE(std::isnan(student_t_quantile(1.5, 3)));
  EXPECT_TRUE(std::isnan(student_t_quantile(0.9, 0)));
  EXPECT_TRUE(std::isnan(student_t_quantile(kNaN, 3)));
  // The quantile inverts the CDF.
  for (double p : {0.01, 0.3, 0.9, 0.999})
    EXPECT_NEAR(student_t_cdf(student_t_quantile(p, 2), 2), p, 1e-10);
}

TEST(StatsPairedT, MatchesScipy) {
  const PairedT r = paired_t({0.051, 0.047, 0.055, 0.049, 0.052}, 0.9875);
  EXPECT_EQ(r.n, 5u);
  EXPECT_NEAR(r.mean, 0.0508, 1e-15);
  EXPECT_NEAR(r.p_two_sided, 3.0357815175148008e-06, 1e-15);
  EXPECT_NEAR(r.ci.lo, 0.04494731578252165, 1e-10);  // t.ppf(0.99375, 4)
  EXPECT_NEAR(r.ci.hi, 0.05665268421747834, 1e-10);
  const PairedT z = paired_t({0.01, -0.004, 0.006, -0.012, 0.003, 0.0}, 0.95);
  EXPECT_NEAR(z.p_two_sided, 0.8812383827884378, 1e-10);
  EXPECT_LT(z.ci.lo, 0);
  EXPECT_GT(z.ci.hi, 0);
}

TEST(StatsPairedT, EdgeCases) {
  EXPECT_TRUE(std::isnan(paired_t({}, 0.95).p_two_sided));
  EXPECT_TRUE(std::isnan(paired_t({0.1}, 0.95).mean));  // one pair: no spread
  EXPECT_FALSE(paired_t({0.1}, 0.95).ci.valid());
  EXPECT_TRUE(std::isnan(paired_t({0.1, kNaN}, 0.95).p_two_sided));
  EXPECT_TRUE(std::isnan(paired_t({0.1, kInf}, 0.95).p_two_sided));
  const PairedT same = paired_t({0.02, 0.02, 0.02}, 0.95);  // no spread: the point, decided
  EXPECT_EQ(same.sd, 0.0);
  EXPECT_EQ(same.p_two_sided, 0.0);
  EXPECT_EQ(same.ci.lo, 0.02);
  EXPECT_EQ(same.ci.hi, 0.02);
  EXPECT_EQ(paired_t({0, 0}, 0.95).p_two_sided, 1.0);
}

TEST(StatsPairedMinDetectableEffect, Values) {
  // scipy: (t.ppf(1 - 0.0125/2, 5) + t.ppf(0.8, 5)) * 0.01 / sqrt(6).
  EXPECT_NEAR(paired_min_detectable_effect(0.01, 6, 0.0125, 0.8), 0.019308300816593252, 1e-11);
  EXPECT_EQ(paired_min_detectable_effect(0, 6, 0.05, 0.8), 0.0);
  // More pairs: smaller; it tends to the normal formula's sigma * factor / sqrt(n).
  EXPECT_LT(paired_min_detectable_effect(1, 24, 0.05, 0.8),
            paired_min_detectable_effect(1, 6, 0.05, 0.8));
  EXPECT_NEAR(paired_min_detectable_effect(1, 100000, 0.05, 0.8) * std::sqrt(100000.0),
              normal_quantile(0.975) + normal_quantile(0.8), 1e-3);
  EXPECT_TRUE(std::isnan(paired_min_detectable_effect(1, 1, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(paired_min_detectable_effect(-1, 5, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(paired_min_detectable_effect(kNaN, 5, 0.05, 0.8)));
  EXPECT_TRUE(std::isnan(paired_min_detectable_effect(1, 5, 0, 0.8)));
  EXPECT_TRUE(std::isnan(paired_min_detectable_effect(1, 5, 0.05, 1)));
}

TEST(StatsHolm, KnownSets) {
  // Sorted 0.01, 0.03, 0.04: 3*0.01 = 0.03; max(0.03, 2*0.03) = 0.06; max(0.06, 1*0.04) = 0.06.
  auto a = holm_adjust({0.01, 0.04, 0.03});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_NEAR(a[0], 0.03, 1e-15);
  EXPECT_NEAR(a[1], 0.06, 1e-15);
  EXPECT_NEAR(a[2], 0.06, 1e-15);
  // Two checks, 0.03 and 0.04: each alone below 0.05, neither after the correction.
  auto two = holm_adjust({0.03, 0.04});
  EXPECT_NEAR(two[0], 0.06, 1e-15);
  EXPECT_NEAR(two[1], 0.06, 1e-15);
  // Ties get the same adjusted value.
  auto ties = holm_adjust({0.02, 0.02, 0.5});
  EXPECT_NEAR(ties[0], 0.06, 1e-15);
  EXPECT_NEAR(ties[1], 0.06, 1e-15);
  EXPECT_NEAR(ties[2], 0.5, 1e-15);
  // Capped at 1, and monotone.
  auto cap = holm_adjust({0.6, 0.7});
  EXPECT_EQ(cap, (std::vector<double>{1.0, 1.0}));
}

TEST(StatsHolm, EdgeCases) {
  EXPECT_TRUE(holm_adjust({}).empty());
  EXPECT_EQ(holm_adjust({0.03}), std::vector<double>{0.03});  // k = 1: unchanged
  EXPECT_EQ(holm_adjust({1.0}), std::vector<double>{1.0});
  // A NaN stays NaN, sorts last and still counts in k = 3.
  auto n = holm_adjust({kNaN, 0.01, 0.04});
  EXPECT_TRUE(std::isnan(n[0]));
  EXPECT_NEAR(n[1], 0.03, 1e-15);
  EXPECT_NEAR(n[2], 0.08, 1e-15);
  auto all = holm_adjust({kNaN, kNaN});
  EXPECT_TRUE(std::isnan(all[0]) && std::isnan(all[1]));
}

}  // namespace
}  // namespace lockstep::stats
