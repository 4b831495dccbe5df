// Tests for `lockstep scale` without running anything: the Amdahl fit (harness/scale/amdahl.h),
// the batch plan, speed-up and efficiency math, the warnings (harness/scale/scaling.h) and the
// reports rendered from synthetic points (reports/scale/reporters.h).
#include <gtest/gtest.h>

#include "tests/fixtures/scoped_env.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "harness/scale/amdahl.h"
#include "harness/scale/scaling.h"
#include "harness/util/files.h"
#include "reports/reporter.h"
#include "reports/scale/reporters.h"

namespace lockstep::scale {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
  for (const auto& s : v)
    if (contains(s, needle)) return true;
  return false;
}

std::vector<SpeedupPoint> amdahl_points(double p, const std::vector<double>& ns, double ref = 1) {
  std::vector<SpeedupPoint> pts;
  for (double n : ns) pts.push_back({n, amdahl_speedup(p, n) / amdahl_speedup(p, ref)});
  return pts;
}

// ---- Amdahl fit ------------------------------------------------------------------------------

TEST(Amdahl, SpeedupFormula) {
  EXPECT_DOUBLE_EQ(amdahl_speedup(0.9, 1), 1.0);
  EXPECT_NEAR(amdahl_speedup(0.9, 8), 80.0 / 17.0, 1e-12);
  EXPECT_DOUBLE_EQ(amdahl_speedup(1.0, 64), 64.0);
  EXPECT_DOUBLE_EQ(amdahl_speedup(0.0, 64), 1.0);
}

TEST(Amdahl, ExactSyntheticDataRecoversP) {
  const auto f = fit_amdahl(amdahl_points(0.9, {1, 2, 4, 8, 16}));
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.p, 0.9, 1e-9);
  EXPECT_NEAR(f.p_raw, 0.9, 1e-9);
  EXPECT_NEAR(f.a, 0.1, 1e-9);
  EXPECT_NEAR(f.b, 0.9, 1e-9);
  EXPECT_FALSE(f.clamped);
  EXPECT_FALSE(f.superlinear);
  EXPECT_FALSE(f.poor);
  EXPECT_NEAR(f.r2, 1.0, 1e-12);
  EXPECT_LT(f.max_rel_residual, 1e-9);
  EXPECT_EQ(f.sizes, 5);
  EXPECT_EQ(f.ref_n, 1);
  EXPECT_NEAR(f.predict(8), 1.0 / (0.1 + 0.9 / 8), 1e-9);
  EXPECT_NEAR(f.predict(64), 1.0 / (0.1 + 0.9 / 64), 1e-9);
  EXPECT_NEAR(f.max_speedup(), 10.0, 1e-8);
}

TEST(Amdahl, ExactDataRelativeToALargerReference) {
  // Speed-ups measured from N=2: s(N) = S(N)/S(2). The fit still recovers P and predicts
  // relative to N=2.
  const auto f = fit_amdahl(amdahl_points(0.75, {2, 4, 8}, 2));
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.ref_n, 2);
  EXPECT_NEAR(f.p, 0.75, 1e-9);
  EXPECT_NEAR(f.predict(2), 1.0, 1e-12);
  EXPECT_NEAR(f.predict(64), amdahl_speedup(0.75, 64) / amdahl_speedup(0.75, 2), 1e-9);
  EXPECT_NEAR(f.predict_vs_one(64), amdahl_speedup(0.75, 64), 1e-9);
}

TEST(Amdahl, TwoSizesDetermineTheCurveExactly) {
  // 1/s = 1 - P(1 - 1/N): s(2) = 1.6 -> P = 2 (1 - 1/1.6) = 0.75.
  const auto f = fit_amdahl({{1, 1.0}, {2, 1.6}});
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.p, 0.75, 1e-12);
  EXPECT_TRUE(std::isnan(f.r2));
  EXPECT_FALSE(f.poor);
  EXPECT_TRUE(any_contains(f.notes, "no goodness of fit")) << ::testing::PrintToString(f.notes);
}

TEST(Amdahl, NoisyDataStaysCloseAndReportsTheFit) {
  // +/-2% deterministic "noise", three repeats per size.
  std::vector<SpeedupPoint> pts;
  int k = 0;
  for (double n : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0})
    for (int rep = 0; rep < 3; ++rep)
      pts.push_back({n, amdahl_speedup(0.95, n) * (1 + 0.02 * std::sin(1.7 * ++k))});
  const auto f = fit_amdahl(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.p, 0.95, 0.01);
  EXPECT_GT(f.r2, 0.99);
  EXPECT_FALSE(f.poor);
  EXPECT_EQ(f.points, 18);
  EXPECT_EQ(f.sizes, 6);
  EXPECT_GT(f.max_rel_residual, 0.0);
  EXPECT_LT(f.max_rel_residual, 0.06);
}

TEST(Amdahl, DataThatDoesNotFollowTheLawIsAPoorFit) {
  // Throughput that rises then collapses (contention): no Amdahl curve fits it.
  const auto f = fit_amdahl({{1, 1.0}, {2, 1.9}, {4, 1.2}, {8, 0.6}});
  ASSERT_TRUE(f.ok);
  EXPECT_TRUE(f.poor);
  EXPECT_TRUE(any_contains(f.notes, "poor fit")) << ::testing::PrintToString(f.notes);
  EXPECT_GE(f.p, 0.0);
  EXPECT_LE(f.p, 1.0);
}

TEST(Amdahl, OneSizeOnlyIsNoFitAndSaysSo) {
  const auto f = fit_amdahl({{1, 1.0}});
  EXPECT_FALSE(f.ok);
  EXPECT_TRUE(std::isnan(f.p));
  EXPECT_TRUE(std::isnan(f.predict(8)));
  EXPECT_TRUE(std::isnan(f.max_speedup()));
  ASSERT_FALSE(f.notes.empty());
  EXPECT_TRUE(contains(f.notes[0], "no fit: only N=1 measured")) << f.notes[0];
  // Repeats of one size are still one size.
  EXPECT_FALSE(fit_amdahl({{2, 1.0}, {2, 1.02}}).ok);
  EXPECT_TRUE(contains(fit_amdahl({}).notes.at(0), "no fit"));
}

TEST(Amdahl, SuperlinearSpeedupIsClampedToOneAndFlagged) {
  const auto f = fit_amdahl({{1, 1.0}, {2, 2.3}, {4, 4.9}});
  ASSERT_TRUE(f.ok);
  EXPECT_GT(f.p_raw, 1.0);
  EXPECT_EQ(f.p, 1.0);
  EXPECT_TRUE(f.clamped);
  EXPECT_TRUE(f.superlinear);
  EXPECT_TRUE(any_contains(f.notes, "superlinear")) << ::testing::PrintToString(f.notes);
  EXPECT_NEAR(f.predict(64), 64.0, 1e-12);  // predictions use the clamped P
  EXPECT_TRUE(std::isinf(f.max_speedup()));
}

TEST(Amdahl, SlowdownIsClampedToZeroAndFlagged) {
  const auto f = fit_amdahl({{1, 1.0}, {2, 0.8}, {4, 0.7}});
  ASSERT_TRUE(f.ok);
  EXPECT_LT(f.p_raw, 0.0);
  EXPECT_EQ(f.p, 0.0);
  EXPECT_TRUE(f.slowdown);
  EXPECT_TRUE(any_contains(f.notes, "slowdown"));
  EXPECT_DOUBLE_EQ(f.predict(64), 1.0);
}

TEST(Amdahl, UnusablePointsAreLeftOutWithANote) {
  auto pts = amdahl_points(0.9, {1, 2, 4});
  pts.push_back({8, kNaN});
  pts.push_back({16, 0.0});
  const auto f = fit_amdahl(pts);
  ASSERT_TRUE(f.ok);
  EXPECT_EQ(f.points, 3);
  EXPECT_NEAR(f.p, 0.9, 1e-9);
  EXPECT_TRUE(any_contains(f.notes, "2 point(s) without a finite positive speed-up"));
}

// ---- the plan, the math, the warnings --------------------------------------------------------

TEST(ScalePlan, StrongKeepsTheGlobalBatchAndSkipsIndivisibleSizes) {
  const auto pts = plan_series(Mode::Strong, {4, 1, 3, 2}, 8);
  ASSERT_EQ(pts.size(), 4u);
  EXPECT_EQ(pts[0].n, 1);  // sorted
  EXPECT_EQ(pts[0].micro_batch, 8);
  EXPECT_EQ(pts[1].micro_batch, 4);
  EXPECT_EQ(pts[2].n, 3);
  EXPECT_EQ(pts[2].status, scale::PointStatus::Skipped);
  EXPECT_EQ(pts[2].global_batch, 8);  // never changed
  EXPECT_TRUE(contains(pts[2].note, "not divisible by 3")) << pts[2].note;
  EXPECT_EQ(pts[3].micro_batch, 2);
  for (const auto& p : pts) EXPECT_EQ(p.global_batch, 8);
}

TEST(ScalePlan, WeakScalesTheGlobalBatchWithTheRanks) {
  const auto pts = plan_series(Mode::Weak, {1, 2, 3, 4}, 8);
  for (const auto& p : pts) {
    EXPECT_EQ(p.status, scale::PointStatus::Ok);
    EXPECT_EQ(p.global_batch, 8 * p.n);
    EXPECT_EQ(p.micro_batch, 8);
  }
}

ScalePoint measured(Mode mode, int n, int64_t batch, std::vector<double> tps, double comm = 0.1) {
  ScalePoint p;
  p.mode = mode;
  p.n = n;
  p.global_batch = batch;
  p.micro_batch = batch / n;
  p.tokens_per_sec_repeats = tps;
  for (size_t i = 0; i < tps.size(); ++i) {
    p.comm_share_repeats.push_back(comm);
    p.step_ms_p50_repeats.push_back(10.0 * n);
  }
  return p;
}

TEST(ScaleMath, SpeedupAndEfficiencyFromMedians) {
  ScaleSeries s;
  s.mode = Mode::Strong;
  s.points = {measured(Mode::Strong, 4, 8, {300}),
              measured(Mode::Strong, 1, 8, {110, 90, 100}, 0.0),
              measured(Mode::Strong, 2, 8, {180, 170, 190}, 0.2)};
  finish_series(s);
  ASSERT_EQ(s.points[0].n, 1);
  EXPECT_EQ(s.ref_n, 1);
  EXPECT_DOUBLE_EQ(s.points[0].tokens_per_sec, 100);
  EXPECT_DOUBLE_EQ(s.points[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(s.points[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(s.points[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(s.points[1].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(s.points[1].comm_share, 0.2);
  EXPECT_DOUBLE_EQ(s.points[2].speedup, 3.0);
  EXPECT_DOUBLE_EQ(s.points[2].efficiency, 0.75);
  ASSERT_TRUE(s.fit.ok);
  EXPECT_EQ(s.fit.sizes, 3);
  EXPECT_GT(s.fit.p, 0.8);
  EXPECT_LT(s.fit.p, 1.0);
}

TEST(ScaleMath, ReferenceIsTheSmallestMeasuredSize) {
  ScaleSeries s;
  s.mode = Mode::Weak;
  auto failed = measured(Mode::Weak, 1, 8, {});
  failed.status = scale::PointStatus::Failed;
  s.points = {failed, measured(Mode::Weak, 2, 16, {200}), measured(Mode::Weak, 4, 32, {360})};
  finish_series(s);
  EXPECT_EQ(s.ref_n, 2);
  EXPECT_TRUE(std::isnan(s.points[0].speedup));
  EXPECT_DOUBLE_EQ(s.points[1].speedup, 1.0);
  EXPECT_DOUBLE_EQ(s.points[2].speedup, 1.8);
  EXPECT_DOUBLE_EQ(s.points[2].efficiency, 0.9);  // 1.8 / (4/2)
}

TEST(ScaleWarnings, StrongScalingNamesThePerRankMicroBatchAtEachN) {
  ScaleSeries strong{Mode::Strong, plan_series(Mode::Strong, {1, 2, 3, 4}, 8), 0, {}};
  const std::string w = micro_batch_warning(strong);
  EXPECT_TRUE(contains(w, "per-rank micro-batch shrinks")) << w;
  EXPECT_TRUE(contains(w, "8 sequences at N=1, 4 at N=2, 2 at N=4")) << w;  // N=3 skipped
  EXPECT_TRUE(contains(w, "weak")) << w;
  ScaleSeries weak{Mode::Weak, plan_series(Mode::Weak, {1, 2, 4}, 8), 0, {}};
  EXPECT_EQ(micro_batch_warning(weak), "");
  ScaleSeries one{Mode::Strong, plan_series(Mode::Strong, {2}, 8), 0, {}};
  EXPECT_EQ(micro_batch_warning(one), "");
}

TEST(ScaleWarnings, SharedCores) {
  EXPECT_FALSE(shares_cores(2, 2, 1, "cpu"));
  EXPECT_TRUE(shares_cores(2, 4, 1, "cpu"));
  EXPECT_TRUE(shares_cores(2, 2, 2, "cpu"));
  EXPECT_FALSE(shares_cores(2, 4, 1, "cuda"));
}

// A finished synthetic result: strong and weak at N = 1, 2, 4 on a 2-core host.
ScaleResult synthetic_result() {
  ScaleResult r;
  r.config = "configs/baseline.toml";
  r.name = "base<line>";
  r.mode = Mode::Both;
  r.out_dir = "runs/x-scale-baseline";
  r.nprocs = {1, 2, 3, 4};
  r.repeats = 3;
  r.steps_timed = 30;
  r.stop_after = 40;
  r.warmup_steps = 5;
  r.profile_window = 5;
  r.base_batch = 8;
  r.threads_per_rank = 1;
  r.device = "cpu";
  r.host_cores = 2;
  r.load_average = 0.1;
  ScaleSeries strong{Mode::Strong, plan_series(Mode::Strong, r.nprocs, 8), 0, {}};
  ScaleSeries weak{Mode::Weak, plan_series(Mode::Weak, r.nprocs, 8), 0, {}};
  auto fill = [](ScalePoint& p, std::vector<double> tps, double comm) {
    p.tokens_per_sec_repeats = tps;
    p.comm_share_repeats.assign(tps.size(), comm);
    p.step_ms_p50_repeats.assign(tps.size(), 12.5);
    p.run_dirs = {"runs/x/" + std::string(to_string(p.mode)) + "-" + std::to_string(p.n) +
                  "/repeat-1"};
  };
  fill(strong.points[0], {1000, 1010, 990}, 0.0);
  fill(strong.points[1], {1800, 1790, 1810}, 0.12);
  fill(strong.points[3], {2900, 2950, 2850}, 0.25);
  fill(weak.points[0], {1000, 1010, 990}, 0.0);
  weak.points[0].shared_with = "strong";
  fill(weak.points[1], {1900, 1880, 1920}, 0.08);
  fill(weak.points[2], {2700, 2710, 2690}, 0.1);
  fill(weak.points[3], {3500, 3480, 3520}, 0.15);
  r.series = {strong, weak};
  r.env = {{"libtorch", "2.3.0"}, {"host", "box"}};
  r.wall_seconds = 42;
  finish_result(r);
  return r;
}

TEST(ScaleResultTest, WarningsNotesAndExitCode) {
  auto r = synthetic_result();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(any_contains(r.warnings, "8 sequences at N=1, 4 at N=2, 2 at N=4"))
      << ::testing::PrintToString(r.warnings);
  EXPECT_TRUE(r.shares_cores);  // 4 ranks x 1 thread on 2 cores
  EXPECT_TRUE(any_contains(r.warnings, "4 ranks x 1 thread(s) = 4 threads on 2 cores"));
  EXPECT_TRUE(any_contains(r.warnings, "not a cluster"));
  EXPECT_FALSE(any_contains(r.warnings, "busy"));
  EXPECT_TRUE(any_contains(r.notes, "strong N=3 skipped"));
  EXPECT_TRUE(any_contains(r.notes, "weak N=1 is the same run as strong N=1"));
  EXPECT_TRUE(any_contains(r.notes, "loopback"));
  ASSERT_NE(r.headline(), nullptr);
  EXPECT_EQ(r.headline()->mode, Mode::Strong);
  EXPECT_DOUBLE_EQ(r.series[0].points[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(r.series[1].points[3].efficiency, 3500.0 / 1000 / 4);

  ScaleResult failed = synthetic_result();
  failed.failures.push_back("strong-2 (N=2, global batch 8) repeat 1 in DIR: crashed: exit code 3");
  failed.load_average = 3.5;
  failed.warnings.clear();
  failed.notes.clear();
  finish_result(failed);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_TRUE(any_contains(failed.warnings, "busy"));
}

TEST(ScaleResultTest, OneSizeHasNoFitAndSaysSo) {
  ScaleResult r;
  r.mode = Mode::Strong;
  r.nprocs = {1};
  r.base_batch = 8;
  r.device = "cpu";
  r.host_cores = 2;
  ScaleSeries s{Mode::Strong, plan_series(Mode::Strong, {1}, 8), 0, {}};
  s.points[0].tokens_per_sec_repeats = {500};
  r.series = {s};
  finish_result(r);
  EXPECT_FALSE(r.series[0].fit.ok);
  EXPECT_TRUE(any_contains(r.notes, "no fit: only N=1 measured"));
  const auto j = reports::scale_json(r);
  EXPECT_FALSE(j["amdahl"]["ok"].get<bool>());
  EXPECT_TRUE(j["amdahl"]["p"].is_null());
  EXPECT_TRUE(j["amdahl"]["predictions"][0]["speedup"].is_null());
}

// ---- reports -----------------------------------------------------------------------------------

using testing::ScopedEnv;

TEST(ScaleReport, JsonCarriesTheValues) {
  const auto r = synthetic_result();
  const json j = reports::scale_json(r);
  EXPECT_EQ(j["tool"], "lockstep scale");
  EXPECT_EQ(j["mode"], "both");
  EXPECT_EQ(j["host"]["cores"], 2);
  EXPECT_TRUE(j["host"]["shares_cores"].get<bool>());
  ASSERT_EQ(j["series"].size(), 2u);
  EXPECT_EQ(j["series"][0]["mode"], "strong");
  EXPECT_EQ(j["series"][1]["mode"], "weak");
  const auto& sp = j["series"][0]["points"];
  ASSERT_EQ(sp.size(), 4u);
  EXPECT_EQ(sp[0]["n"], 1);
  EXPECT_DOUBLE_EQ(sp[0]["speedup"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(sp[1]["speedup"].get<double>(), 1.8);
  EXPECT_DOUBLE_EQ(sp[1]["efficiency"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(sp[1]["comm_share"].get<double>(), 0.12);
  EXPECT_EQ(sp[1]["micro_batch_per_rank"], 4);
  EXPECT_EQ(sp[2]["status"], "skipped");
  EXPECT_TRUE(sp[2]["tokens_per_sec"].is_null());
  EXPECT_EQ(j["series"][1]["points"][0]["shared_with"], "strong");
  const auto& a = j["amdahl"];
  EXPECT_EQ(a["series"], "strong");
  EXPECT_DOUBLE_EQ(a["p"].get<double>(), r.series[0].fit.p);
  ASSERT_EQ(a["predictions"].size(), 2u);
  EXPECT_EQ(a["predictions"][0]["n"], 8);
  EXPECT_EQ(a["predictions"][1]["n"], 64);
  EXPECT_DOUBLE_EQ(a["predictions"][1]["speedup"].get<double>(), r.series[0].fit.predict(64));
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_FALSE(j["warnings"].empty());
  // Round trip through text: every non-finite number became null, so the text parses.
  EXPECT_NO_THROW(json::parse(j.dump()));
}

TEST(ScaleReport, ConsoleAndMarkdownShowTheTable) {
  const auto r = synthetic_result();
  const std::string c = reports::ScaleConsoleReporter().render(r);
  EXPECT_TRUE(contains(c, "strong scaling: global batch 8 at every N")) << c;
  EXPECT_TRUE(contains(c, "1.80x")) << c;
  EXPECT_TRUE(contains(c, "90.0%")) << c;
  EXPECT_TRUE(contains(c, "Amdahl fit (strong): P = ")) << c;
  EXPECT_TRUE(contains(c, "64 ranks")) << c;
  EXPECT_TRUE(contains(c, "skipped")) << c;
  const std::string md = reports::ScaleMarkdownReporter().render(r);
  EXPECT_TRUE(contains(md, "| 2 | 8 | 4 | 1800.0 | 1.80× | 90.0% | 12.0% |")) << md;
  EXPECT_TRUE(contains(md, "base&lt;line&gt;")) << md;  // escaped
  EXPECT_TRUE(contains(md, "same run as strong")) << md;
}

TEST(ScaleReport, HtmlIsSelfContainedWithThePlot) {
  const auto r = synthetic_result();
  const std::string h = reports::ScaleHtmlReporter().render(r);
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(contains(h, "</html>"));
  EXPECT_FALSE(contains(h, "<script"));
  EXPECT_FALSE(contains(h, "src="));
  EXPECT_FALSE(contains(h, "<link rel=\"stylesheet\""));
  EXPECT_FALSE(contains(h, "href=\"http"));
  EXPECT_FALSE(contains(h, "base<line>"));  // escaped
  EXPECT_TRUE(contains(h, "base&lt;line&gt;"));
  EXPECT_TRUE(contains(h, "P = " + reports::text::fixed(r.series[0].fit.p, 3)));
  EXPECT_TRUE(contains(h, "per-rank micro-batch shrinks"));
  // gnuplot is part of the set-up (./lockstep installs it): a missing plot is a failure here.
  ASSERT_FALSE(contains(h, "plot unavailable")) << "gnuplot missing or failing";
  EXPECT_TRUE(contains(h, "<svg role=\"img\" class=\"plot\""));
  EXPECT_TRUE(contains(h, "measured strong"));
  EXPECT_TRUE(contains(h, "measured weak"));
  EXPECT_TRUE(contains(h, "Amdahl fit (strong)"));
  EXPECT_TRUE(contains(h, "ideal (linear)"));
  EXPECT_TRUE(contains(h, "64 ranks: "));
}

TEST(ScaleReport, WithoutGnuplotThePageStillRenders) {
  ScopedEnv env("LOCKSTEP_GNUPLOT", "/nonexistent/gnuplot");
  const auto r = synthetic_result();
  const std::string h = reports::ScaleHtmlReporter().render(r);
  EXPECT_TRUE(contains(h, "plot unavailable")) << h.substr(0, 400);
  EXPECT_TRUE(contains(h, "</html>"));
}

TEST(ScaleReport, WritesThreeFilesAtomically) {
  const fs::path dir =
      fs::temp_directory_path() / ("lockstep-scale-test-" + std::to_string(std::random_device{}()));
  ScopedEnv env("LOCKSTEP_GNUPLOT", "/nonexistent/gnuplot");  // keep it fast
  const auto paths = reports::write_scale_reports(synthetic_result(), dir);
  ASSERT_EQ(paths.size(), 3u);
  for (const auto& p : paths) EXPECT_GT(fs::file_size(p), 100u) << p;
  EXPECT_EQ(json::parse(util::read_file(dir / "report.json"))["series"].size(), 2u);
  fs::remove_all(dir);
}

// The mode is an enum inside; its words are the CLI's and report.json's (issue 53).
TEST(ScaleMode, WordsRoundTrip) {
  for (Mode m : {Mode::Strong, Mode::Weak, Mode::Both}) EXPECT_EQ(parse_mode(to_string(m)), m);
  EXPECT_STREQ(to_string(Mode::Weak), "weak");
  EXPECT_FALSE(parse_mode("sideways").has_value());
  EXPECT_FALSE(parse_mode("Strong").has_value());
}

}  // namespace
}  // namespace lockstep::scale
