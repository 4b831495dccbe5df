// End to end: `lockstep scale` with the real binary (real ranks over loopback, real files).
// Asserts the structure and the math of the report, never the timings. The main case writes into
// SCALE_OUT_DIR so the scale_html_renders ctest can open its report.html in a browser.
#include <cmath>

#include "cli_util.h"
#include "harness/util/files.h"

using namespace lockstep::testing;

namespace {

bool contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

}  // namespace

TEST(Scale, StrongAndWeakAtOneAndTwoRanks) {
  const fs::path out = SCALE_OUT_DIR;
  fs::remove_all(out);
  TempDir tmp;
  auto r = run_lockstep({"scale", "configs/baseline.toml", "--nproc", "1,2", "--mode", "both",
                         "--repeats", "1", "--steps-timed", "10", "--out", out.string()},
                        tmp.path(), 900);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "strong scaling: global batch 8 at every N")) << r.output;
  EXPECT_TRUE(contains(r.output, "Amdahl fit (strong): P = ")) << r.output;

  const auto j = read_json(out / "report.json");
  EXPECT_EQ(j["stop_after"], 20);  // 5 warmup + 5 profiled + 10 timed
  EXPECT_GE(j["host"]["cores"].get<int>(), 1);
  ASSERT_EQ(j["series"].size(), 2u);
  EXPECT_EQ(j["series"][0]["mode"], "strong");
  EXPECT_EQ(j["series"][1]["mode"], "weak");
  for (const auto& s : j["series"]) {
    const std::string mode = s["mode"];
    ASSERT_EQ(s["points"].size(), 2u) << mode;
    for (const auto& p : s["points"]) {
      EXPECT_EQ(p["status"], "ok") << mode << " " << p.dump();
      ASSERT_TRUE(p["tokens_per_sec"].is_number()) << mode << " " << p.dump();
      EXPECT_TRUE(std::isfinite(p["tokens_per_sec"].get<double>()));
      EXPECT_GT(p["tokens_per_sec"].get<double>(), 0);
      EXPECT_TRUE(p["speedup"].is_number());
      EXPECT_TRUE(p["comm_share"].is_number());
      EXPECT_EQ(p["tokens_per_sec_repeats"].size(), 1u);
    }
    EXPECT_EQ(s["points"][0]["n"], 1);
    EXPECT_EQ(s["points"][1]["n"], 2);
    EXPECT_DOUBLE_EQ(s["points"][0]["speedup"].get<double>(), 1.0) << mode;
    EXPECT_DOUBLE_EQ(s["points"][0]["efficiency"].get<double>(), 1.0) << mode;
    EXPECT_NEAR(s["points"][1]["efficiency"].get<double>(),
                s["points"][1]["speedup"].get<double>() / 2, 1e-12);
  }
  // Batches: strong keeps 8 (8 then 4 per rank); weak doubles it (8 per rank); N=1 is shared.
  EXPECT_EQ(j["series"][0]["points"][1]["global_batch"], 8);
  EXPECT_EQ(j["series"][0]["points"][1]["micro_batch_per_rank"], 4);
  EXPECT_EQ(j["series"][1]["points"][1]["global_batch"], 16);
  EXPECT_EQ(j["series"][1]["points"][1]["micro_batch_per_rank"], 8);
  EXPECT_EQ(j["series"][1]["points"][0]["shared_with"], "strong");
  // The ranks really ran: the 2-rank runs' summaries say world_size 2.
  const fs::path two = j["series"][0]["points"][1]["run_dirs"][0].get<std::string>();
  EXPECT_EQ(read_json(two / "summary.json")["environment"]["world_size"], "2");

  bool starvation = false;
  for (const auto& w : j["warnings"]) {
    const std::string s = w;
    starvation = starvation || (contains(s, "per-rank micro-batch shrinks") &&
                                contains(s, "8 sequences at N=1, 4 at N=2"));
  }
  EXPECT_TRUE(starvation) << j["warnings"].dump(2);

  const auto& a = j["amdahl"];
  ASSERT_TRUE(a["ok"].get<bool>()) << a.dump(2);
  EXPECT_EQ(a["series"], "strong");
  const double p = a["p"].get<double>();
  EXPECT_GE(p, 0.0);
  EXPECT_LE(p, 1.0);
  ASSERT_EQ(a["predictions"].size(), 2u);
  EXPECT_EQ(a["predictions"][1]["n"], 64);
  EXPECT_TRUE(a["predictions"][1]["speedup"].is_number());

  for (const char* f : {"report.md", "report.html"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  const std::string html = lockstep::util::read_file(out / "report.html");
  EXPECT_FALSE(contains(html, "<script"));
}

TEST(Scale, BadFlagsExit2BeforeAnyRun) {
  TempDir tmp;
  auto bad_list = run_lockstep(
      {"scale", "configs/baseline.toml", "--nproc", "1,x", "--out", tmp / "a"}, tmp.path(), 120);
  EXPECT_EQ(bad_list.exit_code, 2) << bad_list.output;
  EXPECT_TRUE(contains(bad_list.output, "'x' is not a rank count")) << bad_list.output;
  auto twice = run_lockstep(
      {"scale", "configs/baseline.toml", "--nproc", "2,2", "--out", tmp / "b"}, tmp.path(), 120);
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_TRUE(contains(twice.output, "listed twice")) << twice.output;
  auto mode = run_lockstep(
      {"scale", "configs/baseline.toml", "--nproc", "1,2", "--mode", "sideways"}, tmp.path(), 120);
  EXPECT_EQ(mode.exit_code, 2) << mode.output;
  auto config = run_lockstep(
      {"scale", "configs/baseline.toml", "--nproc", "1", "--set", "run.nope=1"}, tmp.path(), 120);
  EXPECT_EQ(config.exit_code, 2) << config.output;
  // No rank count can run: 8 sequences do not split over 3 or 5 ranks (strong keeps the batch).
  auto none = run_lockstep(
      {"scale", "configs/baseline.toml", "--nproc", "3,5", "--mode", "strong", "--out", tmp / "c"},
      tmp.path(), 120);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_TRUE(contains(none.output, "not divisible by 3")) << none.output;
  EXPECT_FALSE(fs::exists(tmp.path() / "c" / "strong-3"));
}

TEST(Scale, AFailedRunExits3AndTheReportSaysWhich) {
  TempDir tmp;
  auto r = run_lockstep({"scale", "tests/configs/nonfinite.toml", "--nproc", "1", "--mode",
                         "strong", "--repeats", "2", "--steps-timed", "5", "--out", tmp / "s"},
                        tmp.path(), 300);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(contains(r.output, "FAILED")) << r.output;
  const auto j = read_json(tmp.path() / "s" / "report.json");
  ASSERT_EQ(j["failures"].size(), 1u)
      << j.dump(2);  // the second repeat of a failed point is not run
  const std::string f = j["failures"][0];
  EXPECT_TRUE(contains(f, "strong-1")) << f;
  EXPECT_TRUE(contains(f, "nonfinite")) << f;
  EXPECT_TRUE(contains(f, "step 7")) << f;
  EXPECT_EQ(j["series"][0]["points"][0]["status"], "failed");
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_FALSE(j["amdahl"]["ok"].get<bool>());
}
