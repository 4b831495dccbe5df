// The serving gate's "slo attainment" check (issue 54): judged on the log odds ratio of a miss
// per window pair, ln(odds variant / odds baseline) with odds = missed / within, not on the
// difference of the shares in points. Pure functions on fixed inputs: nothing here is timed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/serve/verdict.h"
#include "reports/serve_html.h"
#include "harness/stats/statistics.h"

namespace lockstep::serve {
namespace {

constexpr int64_t kOffered = 1200;  // a 6-s window of the shipped story: 120/s, 360/s for 2 s

std::vector<WindowStats> windows(const std::vector<double>& within, int64_t offered = kOffered) {
  std::vector<WindowStats> out;
  for (double w : within) out.push_back(WindowStats{100, 1000, w, offered});
  return out;
}

ServeCheck attainment(const std::vector<ServeCheck>& checks) {
  return checks.at(2);
}

std::vector<ServeCheck> judge_windows(const std::vector<WindowStats>& base,
                                      const std::vector<WindowStats>& var) {
  SpeedTurns even;
  even.baseline_s = even.variant_s = {0.30, 0.31, 0.29, 0.30, 0.32};
  const std::vector<double> scores{-1.5, -2.5};
  return judge(base, var, even, scores, scores, GateSettings{});
}

TEST(ServeAttainment, TheStatisticIsTheLogOddsRatioOfAMissWithHalfARequestAdded) {
  const auto all = windows({1.0}, 1000)[0];
  const auto two_pct = windows({0.98}, 1000)[0];  // 20 of 1000 missed, 980 within
  const auto none = windows({0.0}, 1000)[0];
  EXPECT_DOUBLE_EQ(miss_log_odds_ratio(all, all), 0.0);
  EXPECT_DOUBLE_EQ(miss_log_odds_ratio(none, none), 0.0);
  EXPECT_NEAR(miss_log_odds_ratio(two_pct, all), std::log(0.5 / 1000.5) - std::log(20.5 / 980.5),
              1e-12);
  EXPECT_NEAR(miss_log_odds_ratio(all, two_pct), -miss_log_odds_ratio(two_pct, all), 1e-12);
  EXPECT_NEAR(miss_log_odds_ratio(two_pct, two_pct), 0.0, 1e-12);
  // Few misses: about the ratio of the misses (half of them: about -ln 2) ...
  EXPECT_NEAR(miss_log_odds_ratio(windows({0.99}, 1000)[0], windows({0.995}, 1000)[0]),
              -std::log(2.0), 0.05);
  // ... few hits: about the ratio of the hits, inverted (twice the hits: about -ln 2 too).
  EXPECT_NEAR(miss_log_odds_ratio(windows({0.01}, 1000)[0], windows({0.02}, 1000)[0]),
              -std::log(2.0), 0.05);
}

// Issue 54's two-lane trials: the variant within the SLO for 99.75-100% of requests, the baseline
// for 62-99% per window (one stormy peak, one calm one). Every window favours the variant, yet
// the points differences (1 .. 37.75) have sd > their mean, and with 4 degrees of freedom the
// 90% t interval of their mean reached below 0: inconclusive. The odds of a miss are 25-200x
// lower in every pair, which a t interval resolves.
TEST(ServeAttainment, AVariantBetterInEveryWindowPassesWhereThePointsDifferenceCouldNot) {
  const auto base = windows({0.99, 0.62, 0.97, 0.985, 0.70});
  const auto var = windows({1.0, 0.9975, 1.0, 1.0, 0.998});
  std::vector<double> points;
  for (size_t k = 0; k < base.size(); ++k)
    points.push_back(100 * (var[k].slo_attainment - base[k].slo_attainment));
  const auto old_t = stats::paired_t(points, 0.90);
  EXPECT_GT(old_t.mean, 14.0);
  EXPECT_LT(old_t.ci.lo, 0.0) << "the old statistic: its interval reaches below 0";

  const ServeCheck c = attainment(judge_windows(base, var));
  EXPECT_EQ(c.name, "slo attainment");
  EXPECT_EQ(c.verdict, compare::Verdict::Pass) << c.detail;
  EXPECT_LT(c.value_pct, -95.0);  // the odds of a miss, % change
  EXPECT_LT(c.ci.hi, -90.0);
  EXPECT_NE(c.detail.find("missed the SLO: 14.70% vs 0.09% of requests"), std::string::npos)
      << c.detail;
}

// The timing checks' intervals are two-sided at 1 - 2 alpha (their edge is the one-sided test):
// 90% at the default alpha. The report said "95% CI" above them until issue 54's follow-up.
TEST(ServeAttainment, EveryTimingCheckNamesItsIntervalsLevel) {
  const auto base = windows({0.99, 0.62, 0.97, 0.985, 0.70});
  const auto var = windows({1.0, 0.9975, 1.0, 1.0, 0.998});
  const auto checks = judge_windows(base, var);
  ASSERT_EQ(checks.size(), 4u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(checks[i].ci_level, 0.90) << checks[i].name;
    EXPECT_NE(checks[i].detail.find("90% CI ["), std::string::npos) << checks[i].detail;
  }
  EXPECT_EQ(checks[3].name, "same math");
  EXPECT_EQ(checks[3].ci_level, 0.0);  // no interval

  SpeedTurns even;
  even.baseline_s = even.variant_s = {0.30, 0.31, 0.29, 0.30, 0.32};
  GateSettings g;
  g.alpha = 0.025;
  const std::vector<double> scores{-1.5, -2.5};
  const auto strict = judge(base, var, even, scores, scores, g);
  EXPECT_DOUBLE_EQ(strict[0].ci_level, 0.95);
  EXPECT_NE(strict[0].detail.find("95% CI ["), std::string::npos) << strict[0].detail;

  reports::ServeHtmlInput in;
  in.checks = checks;
  const std::string html = reports::serve_compare_html(in);
  EXPECT_NE(html.find("<th class=\"num\">90% CI</th>"), std::string::npos);
  EXPECT_EQ(html.find("<th class=\"num\">95% CI</th>"), std::string::npos);
}

TEST(ServeAttainment, MoreMissesInEveryWindowFailAndEqualWindowsNeverDo) {
  const auto base = windows({0.99, 0.62, 0.97, 0.985, 0.70});
  const auto bigger_batch = windows({0.15, 0.13, 0.18, 0.16, 0.14});
  EXPECT_EQ(attainment(judge_windows(base, bigger_batch)).verdict, compare::Verdict::Fail);
  // The same windows on both sides: no effect at all; every service at 100%: equal, a pass.
  EXPECT_EQ(attainment(judge_windows(base, base)).verdict, compare::Verdict::Pass);
  const auto all = windows({1, 1, 1, 1, 1});
  EXPECT_EQ(attainment(judge_windows(all, all)).verdict, compare::Verdict::Pass);
  // Some windows better, some worse: neither.
  const auto mixed = windows({1.0, 0.40, 0.995, 0.99, 0.80});
  EXPECT_EQ(attainment(judge_windows(base, mixed)).verdict, compare::Verdict::Inconclusive);
}

// A/A, simulated: both arms' missed shares per window from the same storm (a heavy-tailed share
// shared by the pair, times an arm's own lognormal noise), seeded. The gate must not call the
// same service worse more often than alpha; and a variant missing 0-2% of the baseline's
// requests must pass in nearly every trial, where the points difference passed in about 3 of 5.
// And overloaded (issue 54's trials on a busy machine: both arms within the SLO for 1-30% of
// requests, the variant 1.5-8x as many): the odds pass nearly always, as the points did.
double lognormal(stats::SplitMix64& rng, double mu, double sigma) {
  const double u1 = (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = (static_cast<double>(rng.next() >> 11) + 0.5) * 0x1.0p-53;
  return std::exp(mu + sigma * std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2));
}

double uniform(stats::SplitMix64& rng) {
  return static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
}

TEST(ServeAttainment, SimulatedSameServicesRarelyFailAndPlainlyBetterOnesPass) {
  stats::SplitMix64 rng(54);
  const int trials = 1000;
  int aa_fail = 0, better_pass = 0, better_points_pass = 0, overload_pass = 0;
  auto counted = [](double s) { return std::round(std::min(s, 1.0) * kOffered) / kOffered; };
  auto share = [&](double s) { return counted(std::min(s, 0.95)); };
  for (int t = 0; t < trials; ++t) {
    std::vector<double> aa_b, aa_v, b, v, points, over_b, over_v;
    for (int k = 0; k < 5; ++k) {
      over_b.push_back(counted(0.05 * lognormal(rng, 0, 0.6)));
      over_v.push_back(counted(over_b.back() * (1.5 + 6.5 * uniform(rng))));
      const double storm = lognormal(rng, std::log(0.05), 1.2);
      aa_b.push_back(1 - share(storm * lognormal(rng, 0, 0.7)));
      aa_v.push_back(1 - share(storm * lognormal(rng, 0, 0.7)));
      b.push_back(1 - share(storm));
      v.push_back(1 - share(storm * 0.02 * uniform(rng)));
      points.push_back(100 * (v.back() - b.back()));
    }
    aa_fail += attainment(judge_windows(windows(aa_b), windows(aa_v))).verdict ==
               compare::Verdict::Fail;
    better_pass += attainment(judge_windows(windows(b), windows(v))).verdict ==
                   compare::Verdict::Pass;
    better_points_pass += stats::paired_t(points, 0.90).ci.lo >= 0;
    overload_pass += attainment(judge_windows(windows(over_b), windows(over_v))).verdict ==
                     compare::Verdict::Pass;
  }
  EXPECT_LE(aa_fail, trials * 5 / 100) << "false alarms";
  EXPECT_GE(better_pass, trials * 95 / 100);
  EXPECT_LT(better_points_pass, trials * 80 / 100) << "the old statistic's passes";
  EXPECT_GE(overload_pass, trials * 90 / 100);
  RecordProperty("aa_fail", aa_fail);
  RecordProperty("better_pass", better_pass);
  RecordProperty("better_points_pass", better_points_pass);
  RecordProperty("overload_pass", overload_pass);
}

}  // namespace
}  // namespace lockstep::serve
