// The history store (SQLite: schema migrations, record/list/show/export/prune), change-point
// detection (exact detection of a 10% step, no false flags in flat noise, over many seeds), loss
// drift and the regression report's exit code with --window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>

#include "tests/fixtures/compare_fixture.h"
#include "tests/fixtures/history_fixture.h"
#include "harness/history/changepoint.h"
#include "harness/history/report.h"
#include "harness/history/schema.h"
#include "harness/history/sqlite.h"
#include "harness/history/store.h"
#include "harness/util/files.h"
#include "reports/history/reporters.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using history::Better;
using testing::commit_name;
using testing::step_series;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("lockstep-history-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  fs::path path_;
};

std::vector<std::string> commits(size_t n) {
  std::vector<std::string> c;
  for (size_t i = 0; i < n; ++i) c.push_back(commit_name(i));
  return c;
}

// --- the store ---------------------------------------------------------------------------------

TEST(HistoryPath, FlagThenEnvironmentThenDefault) {
  const char* old = std::getenv("LOCKSTEP_HISTORY");
  std::string saved = old ? old : "";
  ::setenv("LOCKSTEP_HISTORY", "/tmp/from-env.sqlite", 1);
  EXPECT_EQ(history::resolve_path("x.sqlite"), fs::path("x.sqlite"));
  EXPECT_EQ(history::resolve_path(""), fs::path("/tmp/from-env.sqlite"));
  ::unsetenv("LOCKSTEP_HISTORY");
  EXPECT_EQ(history::resolve_path(""), fs::path("runs/history.sqlite"));
  if (old) ::setenv("LOCKSTEP_HISTORY", saved.c_str(), 1);
}

TEST(HistoryStore, CreatesAVersionedWalDatabase) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "sub" / "h.sqlite", true);
  EXPECT_EQ(store.schema_version(), history::kSchemaVersion);
  EXPECT_EQ(store.count(), 0);
  history::sql::Db db((tmp / "sub" / "h.sqlite").string(), false, 1000);
  history::sql::Stmt st(db, "PRAGMA journal_mode");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text(0), "wal");
}

TEST(HistoryStore, ReadCommandsDoNotCreateAMissingDatabase) {
  TempDir tmp;
  EXPECT_THROW(history::Store::open(tmp / "missing.sqlite", false), history::MissingHistory);
  EXPECT_FALSE(fs::exists(tmp / "missing.sqlite"));
}

TEST(HistoryStore, MigratesAVersion1DatabaseKeepingItsRows) {
  TempDir tmp;
  const auto path = tmp / "old.sqlite";
  {
    history::sql::Db db(path.string(), true, 1000);
    history::migrate(db, 1);  // what the first release wrote
    ASSERT_EQ(history::user_version(db), 1);
    db.exec(
        "INSERT INTO entries(kind, recorded_at, git_commit, git_branch, config_name, config_hash, "
        "host, device, libtorch,"
        " threads, world_size, environment, status) VALUES('compare', '2025-12-01T00:00:00.000Z', "
        "'abc', 'main', 'bf16',"
        " 'h1', 'box', 'cpu', '2.1', 1, 1, '{}', 'pass');"
        "INSERT INTO compares(entry_id, baseline_name, baseline_hash, variant_name, variant_hash, "
        "mode, exit_code,"
        " tokens_per_sec_pct, mfu_pts, p99_ms_pct, checks, result, reports, out_dir)"
        " VALUES(1, 'baseline', 'h0', 'bf16', 'h1', 'ab', 0, 9.5, NULL, 1.0, '[]', '{}', '[]', "
        "'runs/x');");
  }
  auto store = history::Store::open(path, false);
  EXPECT_EQ(store.schema_version(), history::kSchemaVersion);
  auto entries = store.list();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].kind, "compare");
  EXPECT_DOUBLE_EQ(*entries[0].tokens_per_sec_pct, 9.5);
  auto shown = store.show(1);
  ASSERT_TRUE(shown);
  EXPECT_EQ((*shown)["compare"]["loss_reference"], "baseline run");  // the v2 column's default
  // And the migrated database takes new rows.
  testing::SyntheticRun r;
  r.commit = "def";
  EXPECT_EQ(testing::record(store, r, ""), 2);
}

TEST(HistoryStore, RefusesADatabaseFromANewerLockstep) {
  TempDir tmp;
  {
    history::sql::Db db((tmp / "new.sqlite").string(), true, 1000);
    db.exec("PRAGMA user_version = 99");
  }
  try {
    history::Store::open(tmp / "new.sqlite", false);
    FAIL() << "expected an error";
  } catch (const history::sql::Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST(HistoryStore, RecordsRunsWithTheirValues) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  testing::SyntheticRun a;
  a.commit = commit_name(1);
  a.tokens_per_sec = 10234.5;
  a.p99_ms = 25.25;
  a.final_loss = 2.103185212345678;
  a.mfu = std::nullopt;
  RunSummary s = testing::synthetic_summary(a);
  const int64_t id =
      store.record_run(s, "[run]\nname = \"baseline\"\n", {5.5, NAN, 2.1}, "/abs/runs/a");
  auto list = store.list();
  ASSERT_EQ(list.size(), 1u);
  const auto& e = list[0];
  EXPECT_EQ(e.id, id);
  EXPECT_EQ(e.kind, "run");
  EXPECT_EQ(e.git_commit, a.commit);
  EXPECT_EQ(e.git_branch, "main");
  EXPECT_EQ(e.config_name, "baseline");
  EXPECT_EQ(e.config_hash, "3f9a1c07d2e4b618");
  EXPECT_EQ(e.host, "ci-runner-3");
  EXPECT_EQ(e.device, "cpu");
  EXPECT_EQ(e.status, "ok");
  EXPECT_DOUBLE_EQ(*e.tokens_per_sec, 10234.5);
  EXPECT_DOUBLE_EQ(*e.p99_ms, 25.25);
  EXPECT_EQ(*e.final_loss, 2.103185212345678);  // bitwise: loss drift depends on it
  EXPECT_FALSE(e.mfu.has_value());              // unknown peak stays unknown
  EXPECT_EQ(e.recorded_at.size(), 24u);         // 2026-01-05T12:34:56.789Z
  auto shown = store.show(id);
  ASSERT_TRUE(shown);
  const auto& j = *shown;
  EXPECT_EQ(j["environment"]["libtorch"], "2.1.2");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["run"]["config_toml"], "[run]\nname = \"baseline\"\n");
  EXPECT_EQ(j["run"]["run_dir"], "/abs/runs/a");
  EXPECT_EQ(j["run"]["loss_curve"].size(), 3u);
  EXPECT_TRUE(j["run"]["loss_curve"][1].is_null());  // NaN as null
  EXPECT_EQ(j["run"]["summary"]["name"], "baseline");
  EXPECT_TRUE(j["run"]["mfu"].is_null());
  EXPECT_FALSE(store.show(id + 1).has_value());
}

TEST(HistoryStore, RecordsComparisonsWithVerdictChecksAndReports) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  auto r = testing::make_compare_result();
  r.loss_reference = "history run #4 (commit abc)";
  const int64_t id = store.record_compare(r, {"/out/report.json", "/out/report.html"});
  auto e = store.list()[0];
  EXPECT_EQ(e.kind, "compare");
  EXPECT_EQ(e.status, compare::to_string(r.verdict));
  EXPECT_EQ(e.exit_code, r.exit_code);
  EXPECT_EQ(e.config_name, r.variant.name);
  EXPECT_EQ(e.baseline_name, r.baseline.name);
  EXPECT_EQ(e.git_commit, r.env.at("git_commit"));
  EXPECT_EQ(e.host, "ci-runner-3");
  EXPECT_DOUBLE_EQ(*e.tokens_per_sec_pct, r.delta.tokens_per_sec_pct.point);
  auto j = *store.show(id);
  EXPECT_EQ(j["compare"]["checks"].size(), r.checks.size());
  EXPECT_EQ(j["compare"]["reports"][1], "/out/report.html");
  EXPECT_EQ(j["compare"]["loss_reference"], "history run #4 (commit abc)");
  EXPECT_EQ(j["compare"]["result"]["verdict"], compare::to_string(r.verdict));
  EXPECT_EQ(j["compare"]["variant_hash"], "a71be2c9904d5f30");
}

// A serving run (`lockstep serve`) is a runs row with workload "serve", a serving comparison a
// compares row with mode "serve": listed, shown, exported and trended beside training entries,
// never taken as a loss reference, and its P99 labelled as request latency.
TEST(HistoryStore, RecordsServingRunsAndComparisonsBesideTrainingOnes) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  history::ServeRunRecord s;
  s.env = {{"git_commit", "abc123"}, {"host", "box"}, {"device", "cpu"}};
  s.name = "serve-baseline";
  s.config_hash = "feedfacefeedface";
  s.config_toml = "[serve]\nrate_rps = 120.0\n";
  s.requests = 1212;
  s.tokens_per_sec = 6268.5;
  s.p50_ms = 9.3;
  s.p99_ms = 58.5;
  s.summary = {{"figures", nlohmann::json::array({{{"lane", "all"}}})}};
  const int64_t run_id = store.record_serve_run(s, {"2026-12-05T10:00:00.000Z"});
  history::ServeCompareRecord c;
  c.env = s.env;
  c.baseline_name = "serve-baseline";
  c.baseline_hash = "feedfacefeedface";
  c.variant_name = "serve-two-lanes";
  c.variant_hash = "0123456789abcdef";
  c.passed = false;
  c.exit_code = 1;
  c.throughput_pct = -4.5;
  c.p99_pct = 12.0;
  c.checks.push_back({{"name", "p99 latency"}, {"passed", false}, {"detail", "worse"}});
  c.result = {{"kind", "serve"}};
  c.reports = {"/out/report.json"};
  c.out_dir = "/out";
  const int64_t cmp_id = store.record_serve_compare(c, {"2026-12-05T11:00:00.000Z"});

  const auto list = store.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, cmp_id);
  EXPECT_EQ(list[0].kind, "compare");
  EXPECT_EQ(list[0].workload, "serve");
  EXPECT_EQ(list[0].status, "fail");
  EXPECT_EQ(list[0].exit_code, 1);
  EXPECT_DOUBLE_EQ(*list[0].tokens_per_sec_pct, -4.5);
  EXPECT_DOUBLE_EQ(*list[0].p99_ms_pct, 12.0);
  EXPECT_EQ(list[1].kind, "run");
  EXPECT_EQ(list[1].workload, "serve");
  EXPECT_DOUBLE_EQ(*list[1].p99_ms, 58.5);
  EXPECT_FALSE(list[1].final_loss);  // no loss in a service
  const auto run = *store.show(run_id);
  EXPECT_EQ(run["run"]["workload"], "serve");
  EXPECT_EQ(run["run"]["steps"], 1212);  // requests offered
  EXPECT_EQ(run["run"]["summary"]["figures"][0]["lane"], "all");
  const auto cmp = *store.show(cmp_id);
  EXPECT_EQ(cmp["compare"]["mode"], "serve");
  EXPECT_EQ(cmp["compare"]["checks"][0]["name"], "p99 latency");
  EXPECT_NE(store.export_csv().find(",serve,"), std::string::npos);
  // Not a loss reference, even for its own config hash.
  EXPECT_FALSE(store.latest_loss_curve("feedfacefeedface", "box"));
  // A training run beside it keeps workload "train".
  testing::SyntheticRun t;
  testing::record(store, t, "");
  EXPECT_EQ(store.list()[0].workload, "train");
  // The trend report: the serving series is labelled as request latency.
  const auto points = store.series("serve-baseline");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].workload, "serve");
  const auto rep = history::build_report(points, {});
  ASSERT_EQ(rep.series.size(), 1u);
  EXPECT_EQ(rep.series[0].workload, "serve");
  EXPECT_EQ(history::metric_label("p99_ms", rep.series[0].workload), "P99 request ms");
  EXPECT_EQ(history::metric_label("p99_ms", "train"), "P99 step ms");
}

TEST(HistoryStore, ExportsJsonAndCsvAndPrunesToTheNewest) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  for (size_t i = 0; i < 5; ++i) {
    testing::SyntheticRun r;
    r.commit = commit_name(i);
    r.name = i == 2 ? "needs, \"quoting\"" : "baseline";
    r.final_loss = 2.0 + 0.1 * static_cast<double>(i);
    testing::record(store, r, testing::night_stamp(i));
  }
  store.record_compare(testing::make_compare_result(), {});
  auto j = store.export_json();
  ASSERT_EQ(j.size(), 6u);
  EXPECT_EQ(j[0]["git_commit"], commit_name(0));  // oldest first
  EXPECT_EQ(j[5]["kind"], "compare");

  const std::string csv = store.export_csv();
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind(
                "id,kind,recorded_at,git_commit,git_branch,config_name,config_hash,host,device", 0),
            0u)
      << header;
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 6);
  EXPECT_NE(csv.find("\"needs, \"\"quoting\"\"\""), std::string::npos) << csv;  // RFC 4180
  EXPECT_NE(csv.find(",2.2000000000000002,"), std::string::npos) << "all 17 digits of a REAL";

  EXPECT_EQ(store.prune(4), 2);  // the two oldest runs go
  EXPECT_EQ(store.count(), 4);
  auto left = store.export_json();
  EXPECT_EQ(left[0]["git_commit"], commit_name(2));
  EXPECT_EQ(store.prune(10), 0);
  EXPECT_EQ(store.prune(0), 4);
  EXPECT_EQ(store.count(), 0);
  history::sql::Db db((tmp / "h.sqlite").string(), false, 1000);
  history::sql::Stmt orphans(
      db, "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM compares)");
  ASSERT_TRUE(orphans.step());
  EXPECT_EQ(orphans.integer(0), 0) << "details must go with their entries";
}

TEST(HistoryStore, LatestLossCurveIsTheNewestHealthyRunOfThatConfigOnThatHost) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  testing::SyntheticRun r;
  r.commit = "old";
  r.final_loss = 2.5;
  testing::record(store, r, testing::night_stamp(1));
  r.commit = "new";
  r.final_loss = 2.25;
  const int64_t want = testing::record(store, r, testing::night_stamp(2));
  r.commit = "newest-but-failed";
  r.status = "nonfinite";
  testing::record(store, r, testing::night_stamp(3));
  r.status = "ok";
  r.host = "other-box";
  r.commit = "other machine";
  testing::record(store, r, testing::night_stamp(4));

  auto ref = store.latest_loss_curve("3f9a1c07d2e4b618", "ci-runner-3");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->id, want);
  EXPECT_EQ(ref->git_commit, "new");
  EXPECT_EQ(ref->curve, (std::vector<double>{5.0, 3.0, 2.25}));
  EXPECT_FALSE(store.latest_loss_curve("3f9a1c07d2e4b618", "nowhere"));
  EXPECT_FALSE(store.latest_loss_curve("0000000000000000", "ci-runner-3"));
}

TEST(HistoryStore, SeriesHasHealthyRunsOldestFirst) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  testing::SyntheticRun r;
  for (size_t i : {3, 1, 2}) {  // recorded out of order
    r.commit = commit_name(i);
    testing::record(store, r, testing::night_stamp(i));
  }
  r.status = "failed";
  testing::record(store, r, testing::night_stamp(4));
  store.record_compare(testing::make_compare_result(), {});
  auto s = store.series();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].git_commit, commit_name(1));
  EXPECT_EQ(s[2].git_commit, commit_name(3));
  EXPECT_EQ(store.series("bf16").size(), 0u);
}

TEST(HistoryStore, TheMachineKeyHoldsTheGpuModel) {
  // Two GPU models in one host are two machines for the trends (issue 17).
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  for (const char* gpu : {"NVIDIA H100 PCIe", "NVIDIA H200", ""}) {
    auto run = testing::synthetic_summary(testing::SyntheticRun{});
    run.env["device"] = *gpu ? "cuda" : "cpu";
    if (*gpu) run.env["gpu"] = gpu;
    store.record_run(run, "[run]\n", {2.0}, "runs/x", {});
  }
  std::vector<std::string> devices;
  for (const auto& p : store.series()) devices.push_back(p.device);
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(devices,
            (std::vector<std::string>{"cpu", "cuda (NVIDIA H100 PCIe)", "cuda (NVIDIA H200)"}));
}

// --- change points -----------------------------------------------------------------------------

struct Rates {
  int exact = 0, any = 0, n = 0;
};

// n seeds of 30 points with a step of step_pct at index 20 (or none): how often exactly that
// change is found (one change, at 20, in the right direction), and how often anything is.
Rates rates(double noise, double step_pct, int n, uint64_t seed0, Better better = Better::Higher) {
  Rates r;
  for (int s = 0; s < n; ++s) {
    auto x = step_series(30, 10000, noise, step_pct == 0 ? 99 : 20, step_pct,
                         seed0 + static_cast<uint64_t>(s));
    auto cps = history::detect_changes(x, commits(30), better);
    ++r.n;
    r.any += !cps.empty();
    const bool worse = better == Better::Higher ? step_pct < 0 : step_pct > 0;
    r.exact += cps.size() == 1 && cps[0].index == 20 && cps[0].regression == worse;
  }
  return r;
}

TEST(ChangePoint, FlagsExactlyTheTenPercentStepAtPoint20) {
  auto x = step_series(30, 10000, 0.015, 20, -10, 42);
  auto cps = history::detect_changes(x, commits(30), Better::Higher);
  ASSERT_EQ(cps.size(), 1u);
  const auto& c = cps[0];
  EXPECT_EQ(c.index, 20u);
  EXPECT_EQ(c.commit, commit_name(20));
  EXPECT_EQ(c.previous_commit, commit_name(19));
  EXPECT_TRUE(c.regression);
  EXPECT_STREQ(c.direction(), "regression");
  EXPECT_NEAR(c.size_pct, -10, 2);
  EXPECT_LT(c.ci_lo, c.size_pct);
  EXPECT_GT(c.ci_hi, c.size_pct);
  EXPECT_LT(c.ci_hi, 0);  // the CI excludes 0
  EXPECT_LE(c.p_value, 0.01);
}

TEST(ChangePoint, FlagsNothingInAFlatNoisySeries) {
  for (uint64_t seed : {42u, 43u, 44u}) {
    auto x = step_series(30, 10000, 0.015, 99, 0, seed);
    EXPECT_TRUE(history::detect_changes(x, commits(30), Better::Higher).empty()) << "seed " << seed;
  }
}

TEST(ChangePoint, DetectsTheStepExactlyOverManySeeds) {
  for (double noise : {0.01, 0.02}) {
    auto r = rates(noise, -10, 100, 1000);
    EXPECT_GE(r.exact, 95) << "noise " << noise << ": exact detection in " << r.exact << " of "
                           << r.n;
    std::printf("[ measured ] noise %.0f%%, 10%% step at 20: exact detection %d/%d\n", noise * 100,
                r.exact, r.n);
  }
}

TEST(ChangePoint, RarelyFlagsFlatNoiseOverManySeeds) {
  for (double noise : {0.01, 0.02}) {
    auto r = rates(noise, 0, 100, 5000);
    EXPECT_LE(r.any, 5) << "noise " << noise << ": false flags in " << r.any << " of " << r.n;
    std::printf("[ measured ] noise %.0f%%, flat: false flags %d/%d\n", noise * 100, r.any, r.n);
  }
}

TEST(ChangePoint, DirectionFollowsWhichWayIsBetter) {
  auto up = step_series(30, 25, 0.015, 20, 10, 3);
  auto p99 = history::detect_changes(up, commits(30), Better::Lower);  // latency up: worse
  ASSERT_EQ(p99.size(), 1u);
  EXPECT_TRUE(p99[0].regression);
  auto tps = history::detect_changes(up, commits(30), Better::Higher);  // throughput up: better
  ASSERT_EQ(tps.size(), 1u);
  EXPECT_FALSE(tps[0].regression);
  EXPECT_STREQ(tps[0].direction(), "improvement");
  EXPECT_NEAR(tps[0].size_pct, 10, 2);
}

TEST(ChangePoint, OneSlowRunIsAnOutlierNotAChange) {
  int flagged = 0;
  for (uint64_t s = 0; s < 100; ++s) {
    auto x = step_series(30, 10000, 0.015, 99, 0, 9000 + s);
    x[static_cast<size_t>(s % 30)] *= 0.7;  // a busy machine, once
    flagged += !history::detect_changes(x, commits(30), Better::Higher).empty();
  }
  EXPECT_LE(flagged, 5);
}

TEST(ChangePoint, FindsTwoChanges) {
  auto x = step_series(40, 10000, 0.01, 12, -10, 11);
  for (size_t i = 28; i < 40; ++i) x[i] *= 1.2;  // a later fix, beyond the original level
  auto cps = history::detect_changes(x, commits(40), Better::Higher);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 12u);
  EXPECT_TRUE(cps[0].regression);
  EXPECT_EQ(cps[1].index, 28u);
  EXPECT_FALSE(cps[1].regression);
}

TEST(ChangePoint, SmallChangesAndShortOrConstantSeriesAreNotFlagged) {
  auto small = step_series(30, 10000, 0.002, 20, -1, 5);  // significant but below min_change_pct
  EXPECT_TRUE(history::detect_changes(small, commits(30), Better::Higher).empty());
  history::ChangePointOptions opt;
  opt.min_change_pct = 0.5;
  EXPECT_EQ(history::detect_changes(small, commits(30), Better::Higher, opt).size(), 1u);
  EXPECT_TRUE(
      history::detect_changes(std::vector<double>(30, 5.0), commits(30), Better::Higher).empty());
  EXPECT_TRUE(history::detect_changes({1, 1, 2, 2, 2}, commits(5), Better::Higher).empty());
  EXPECT_TRUE(history::detect_changes({}, {}, Better::Higher).empty());
  EXPECT_THROW(history::detect_changes({1, NAN}, commits(2), Better::Higher),
               std::invalid_argument);
  EXPECT_THROW(history::detect_changes({1, 2}, commits(3), Better::Higher), std::invalid_argument);
}

TEST(ChangePoint, IsDeterministic) {
  auto x = step_series(30, 10000, 0.02, 20, -10, 77);
  auto a = history::detect_changes(x, commits(30), Better::Higher);
  auto b = history::detect_changes(x, commits(30), Better::Higher);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].ci_lo, b[i].ci_lo);
    EXPECT_EQ(a[i].p_value, b[i].p_value);
  }
}

// --- loss drift --------------------------------------------------------------------------------

TEST(LossDrift, FlagsAnyChangeOfTheFinalLossAtTheSameConfig) {
  std::vector<double> loss(20, 2.1031852);
  for (size_t i = 15; i < 20; ++i) loss[i] = 2.1031853;  // one ulp-ish in the 7th decimal
  std::vector<std::string> hashes(20, "h");
  auto d = history::detect_loss_drift(loss, commits(20), hashes);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].index, 15u);
  EXPECT_EQ(d[0].commit, commit_name(15));
  EXPECT_EQ(d[0].previous_commit, commit_name(14));
  EXPECT_TRUE(d[0].worse);
  EXPECT_FALSE(d[0].same_commit);
  EXPECT_TRUE(
      history::detect_loss_drift(loss, commits(20), hashes, 1e-6).empty());  // with a tolerance
}

TEST(LossDrift, AConfigChangeIsNotDriftButTheSameCommitDifferingIs) {
  std::vector<double> loss{2.0, 2.0, 1.9, 1.9, 1.8};
  std::vector<std::string> hashes{"a", "a", "b", "b", "b"};
  std::vector<std::string> c{"x1", "x2", "x3", "x4", "x4"};
  auto d = history::detect_loss_drift(loss, c, hashes);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].index, 4u);
  EXPECT_TRUE(d[0].same_commit);
  EXPECT_FALSE(d[0].worse);
}

// --- the report --------------------------------------------------------------------------------

std::vector<history::SeriesPoint> series_with(const std::vector<double>& tps,
                                              const std::vector<double>& loss) {
  std::vector<history::SeriesPoint> pts;
  for (size_t i = 0; i < tps.size(); ++i) {
    history::SeriesPoint p;
    p.id = static_cast<int64_t>(i + 1);
    p.recorded_at = testing::night_stamp(i);
    p.git_commit = commit_name(i);
    p.config_name = "baseline";
    p.config_hash = "h";
    p.host = "box";
    p.device = "cpu";
    p.tokens_per_sec = tps[i];
    p.mfu = tps[i] / 1e5;
    p.p99_ms = 25;
    p.final_loss = loss[i];
    pts.push_back(p);
  }
  return pts;
}

TEST(HistoryReport, ExitCodeDependsOnWhetherTheRegressionIsWithinTheWindow) {
  const auto tps = step_series(30, 10000, 0.01, 20, -10, 21);
  const auto pts = series_with(tps, std::vector<double>(30, 2.1));
  history::ReportOptions opt;
  opt.metrics = {"tokens_per_sec"};
  opt.window = 5;  // the last 5 commits: 25..29; the change is at 20
  auto r = history::build_report(pts, opt);
  ASSERT_EQ(r.series.size(), 1u);
  ASSERT_EQ(r.series[0].flags.size(), 1u);
  EXPECT_EQ(r.series[0].flags[0].commit, commit_name(20));
  EXPECT_FALSE(r.series[0].flags[0].in_window);
  EXPECT_EQ(r.exit_code, 0);
  opt.window = 10;  // 20..29
  r = history::build_report(pts, opt);
  EXPECT_TRUE(r.series[0].flags[0].in_window);
  EXPECT_EQ(r.regressions_in_window, 1);
  EXPECT_EQ(r.exit_code, 1);
}

TEST(HistoryReport, ARecentRegressionFailsAndAnImprovementDoesNot) {
  const auto down = step_series(30, 10000, 0.01, 26, -10, 22);  // 4 points after the change
  history::ReportOptions opt;
  opt.metrics = {"tokens_per_sec", "mfu"};
  auto r = history::build_report(series_with(down, std::vector<double>(30, 2.1)), opt);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.regressions_in_window, 2);  // tokens/s and MFU
  const auto up = step_series(30, 10000, 0.01, 26, 10, 22);
  r = history::build_report(series_with(up, std::vector<double>(30, 2.1)), opt);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.series[0].flags.size(), 2u);  // flagged, as improvements
}

// One run (or five) cannot show a change: the report says "too few runs" in every format instead
// of "no change flagged", and counts "1 run", not "1 runs".
TEST(HistoryReport, TooFewRunsIsSaidAsSuchNotAsNoChange) {
  for (size_t n : {1, 5}) {
    const auto r = history::build_report(
        series_with(std::vector<double>(n, 10000), std::vector<double>(n, 2.1)), {});
    ASSERT_EQ(r.series.size(), 1u);
    EXPECT_EQ(r.exit_code, 0);
    const std::string console = reports::HistoryConsoleReporter().render(r),
                      md = reports::HistoryMarkdownReporter().render(r),
                      html = reports::HistoryHtmlReporter().render(r),
                      json = reports::HistoryJsonReporter().render(r);
    const std::string want =
        "too few runs: " + std::to_string(n) + (n == 1 ? " run" : " runs") + " recorded";
    for (const auto* text : {&console, &md, &html, &json}) {
      EXPECT_NE(text->find(want), std::string::npos) << *text;
      EXPECT_EQ(text->find("1 runs"), std::string::npos) << *text;
    }
    for (const auto* text : {&console, &md, &html})
      EXPECT_EQ(text->find("o change flagged"), std::string::npos) << *text;
  }
  // Six runs can show a change: judged, and nothing to flag in a flat series.
  const auto six = history::build_report(
      series_with(std::vector<double>(6, 10000), std::vector<double>(6, 2.1)), {});
  const std::string six_console = reports::HistoryConsoleReporter().render(six);
  EXPECT_NE(six_console.find("6 runs: no change flagged"), std::string::npos) << six_console;
}

TEST(HistoryReport, LossDriftIsFlaggedSeparatelyFromSpeed) {
  const auto flat = step_series(30, 10000, 0.01, 99, 0, 23);
  std::vector<double> loss(30, 2.1031852);
  for (size_t i = 27; i < 30; ++i) loss[i] = 2.1045;
  auto r = history::build_report(series_with(flat, loss), {});
  ASSERT_EQ(r.series[0].flags.size(), 1u);
  const auto& f = r.series[0].flags[0];
  EXPECT_EQ(f.kind, "loss drift");
  EXPECT_EQ(f.metric, "final_loss");
  EXPECT_EQ(f.commit, commit_name(27));
  EXPECT_TRUE(f.regression);
  EXPECT_TRUE(f.in_window);
  EXPECT_EQ(r.exit_code, 1);
  loss.assign(30, 2.1031852);
  for (size_t i = 27; i < 30; ++i) loss[i] = 2.1;  // drift down: flagged, not failed
  r = history::build_report(series_with(flat, loss), {});
  ASSERT_EQ(r.series[0].flags.size(), 1u);
  EXPECT_FALSE(r.series[0].flags[0].regression);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(HistoryReport, GroupsByConfigAndMachineAndRendersEveryFormat) {
  TempDir tmp;
  auto store = history::Store::open(tmp / "h.sqlite", true);
  testing::record_demo_history(store);
  history::ReportOptions opt;
  auto r = history::build_report(store.series(), opt, "h.sqlite");
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].config_name, "baseline");
  EXPECT_EQ(r.series[1].config_name, "bf16");
  EXPECT_TRUE(r.series[1].flags.empty());
  int speed = 0, drift = 0;
  for (const auto& f : r.series[0].flags) (f.kind == "speed" ? speed : drift)++;
  EXPECT_EQ(drift, 1);
  EXPECT_EQ(speed, 3);        // tokens/s, MFU and P99, all at point 20
  EXPECT_EQ(r.exit_code, 1);  // the loss drift at 25 is in the window

  auto files = reports::write_history_reports(r, tmp / "out");
  ASSERT_EQ(files.size(), 3u);
  auto j = nlohmann::json::parse(util::read_file(tmp / "out" / "report.json"));
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["series"][0]["changes"].size(), 3u);
  EXPECT_EQ(j["series"][0]["loss_drift"].size(), 1u);
  EXPECT_EQ(j["series"][0]["changes"][0]["commit"], commit_name(20));
  EXPECT_EQ(j["series"][0]["points"].size(), 30u);
  const std::string md = util::read_file(tmp / "out" / "report.md");
  EXPECT_NE(md.find("regression"), std::string::npos);
  EXPECT_NE(md.find("Loss drift"), std::string::npos);
  const std::string html = util::read_file(tmp / "out" / "report.html");
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Loss drift"), std::string::npos);
  EXPECT_THROW(history::build_report({},
                                     [] {
                                       history::ReportOptions o;
                                       o.metrics = {"speed"};
                                       return o;
                                     }()),
               std::invalid_argument);
}

}  // namespace
}  // namespace lockstep
