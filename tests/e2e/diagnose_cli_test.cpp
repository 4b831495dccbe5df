// End-to-end tests of `lockstep diagnose`, `lockstep stages` and `lockstep trace-check` with the
// real binary: real training runs with one injected fault each ([faults] via --set), then
// `lockstep diagnose RUN --json`; the injected cause must rank first at (or within two steps of)
// the injected step. Each test is its own ctest (tests/CMakeLists.txt); only the stalled-rank one
// is timing-sensitive (RUN_SERIAL).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "cli_util.h"

using namespace lockstep::testing;
using nlohmann::json;

namespace {

constexpr int kFaultStep = 120;  // the stalled-rank test's step

// Where each fault is injected: just after the LR warmup (20 steps), in the steep descent and
// late in the 200-step schedule, and in a 60-step run (--steps 60: the whole schedule compressed
// into 60 steps). Earlier and later steps, and what the detector cannot see there (an LR spike
// in the warmup or at the schedule's tail barely moves the loss): spike_detector_test.cpp on
// recorded curves, and bench/RESULTS.md.
struct Place {
  int step, length;
};
const std::vector<Place> kPlaces{{25, 200}, {40, 200}, {150, 200}, {40, 60}};

// Where runs that later tests (the browser check) read are kept.
fs::path kept_dir(const std::string& name) {
  fs::path p = fs::path(DIAG_OUT_DIR) / name;
  fs::remove_all(p);
  fs::create_directories(p.parent_path());
  return p;
}

// Runs CONFIG (of `length` steps) with the sets, stopping `after` steps after `step` (the schedule
// keeps its length).
void run_with_fault(const std::string& config, const std::vector<std::string>& sets,
                    const fs::path& out, const fs::path& logs, int expect_exit = 0,
                    int step = kFaultStep, int length = 200, int after = 20) {
  std::vector<std::string> args{"run",   config, "--steps", std::to_string(length), "--out",
                                out.string(), "--quiet", "--stop-after",
                                std::to_string(std::min(length, step + after))};
  for (const auto& s : sets) args.push_back("--set"), args.push_back(s);
  auto r = run_lockstep(args, logs, 600);
  ASSERT_EQ(r.exit_code, expect_exit) << r.output;
}

json diagnose_json(const fs::path& run, const fs::path& logs) {
  auto r = run_lockstep({"diagnose", run.string(), "--json"}, logs, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // stdout and stderr share the log; the JSON document is the outermost {...}.
  const auto a = r.output.find('{'), b = r.output.rfind('}');
  if (a == std::string::npos || b == std::string::npos) {
    ADD_FAILURE() << "no JSON in:\n" << r.output;
    return json();
  }
  return json::parse(r.output.substr(a, b - a + 1));
}

// The event holding the detection nearest `step` (within `tol` steps) must have `cause` on top;
// fails listing every event. Chosen by its detections, not its first step: on a loaded host a slow
// step just before the fault is a detection of its own, and when it is within the merge gap the
// event starts there (a non-finite loss at 120 then reads as an event at 118).
void expect_top_cause(const json& d, int step, const std::string& cause, int tol = 2) {
  ASSERT_TRUE(d.contains("spikes")) << d.dump(2);
  const json* hit = nullptr;
  int nearest = tol + 1;
  for (const auto& s : d["spikes"])
    for (const auto& det : s["detections"])
      if (const int off = std::abs(det["step"].get<int>() - step); off < nearest) {
        nearest = off;
        hit = &s;
      }
  ASSERT_NE(hit, nullptr) << "no detection within " << tol << " steps of " << step << ":\n"
                          << d.dump(2);
  const auto& causes = (*hit)["causes"];
  ASSERT_EQ(causes.size(), 6u);
  EXPECT_EQ(causes[0]["cause"], cause) << hit->dump(2);
  EXPECT_GT(causes[0]["score"].get<double>(), causes[1]["score"].get<double>()) << hit->dump(2);
  // Measured results, for the record (ctest --output-on-failure -V shows them).
  std::printf("[diagnose] fault -> event at step %d (%s): top %s %.3f, runner-up %s %.3f\n  %s\n",
              (*hit)["step"].get<int>(), (*hit)["kind"].get<std::string>().c_str(),
              causes[0]["cause"].get<std::string>().c_str(), causes[0]["score"].get<double>(),
              causes[1]["cause"].get<std::string>().c_str(), causes[1]["score"].get<double>(),
              causes[0]["evidence"].get<std::string>().c_str());
}

// `fault` at every place: the event at the fault (`shift` steps later: the LR of step k shows in
// the loss of k+1) names `cause` first. `keep` names a kept folder for the late 200-step run.
void fault_everywhere(const std::string& fault, const std::string& cause, int shift = 0,
                      int expect_exit = 0, const std::string& keep = "") {
  for (const auto& p : kPlaces) {
    SCOPED_TRACE(fault + " at step " + std::to_string(p.step) + " of " +
                 std::to_string(p.length));
    TempDir tmp;
    const fs::path run = !keep.empty() && p.step == 150 ? kept_dir(keep) : tmp.path() / "run";
    run_with_fault("configs/baseline.toml", {"faults." + fault + "=" + std::to_string(p.step)},
                   run, tmp.path(), expect_exit, p.step, p.length, 5);
    auto d = diagnose_json(run, tmp.path());
    expect_top_cause(d, p.step + shift, cause, shift == 0 && cause == "numerics" ? 0 : 2);
    EXPECT_EQ(d["too_short"], "");
  }
}

}  // namespace

TEST(DiagnoseCli, CorruptBatchIsData) {
  fault_everywhere("corrupt_batch_at", "data");
}

TEST(DiagnoseCli, LrSpikeIsLr) {
  // diagnosis.html of the late run is kept for diagnose_html_renders.
  fault_everywhere("lr_spike_at", "lr", 1, 0, "lr_spike");
  const fs::path run = fs::path(DIAG_OUT_DIR) / "lr_spike";
  EXPECT_TRUE(fs::exists(run / "diagnosis.json"));
  EXPECT_TRUE(fs::exists(run / "diagnosis.md"));
  EXPECT_TRUE(fs::exists(run / "diagnosis.html"));
  // The text form goes to stdout and names the same thing.
  TempDir tmp;
  auto text = run_lockstep({"diagnose", run.string()}, tmp.path(), 120);
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("1. lr"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("diagnosis.html"), std::string::npos) << text.output;
}

TEST(DiagnoseCli, GradBlowupIsGrad) {
  fault_everywhere("grad_blowup_at", "grad");
}

TEST(DiagnoseCli, NonFiniteIsNumerics) {
  fault_everywhere("nonfinite_at", "numerics", 0, 3);
}

// A run too short for any step to be judged says so instead of "0 events".
TEST(DiagnoseCli, ARunTooShortToJudgeSaysSo) {
  TempDir tmp;
  // 5 warmup + 5 profiled steps leave one timed step at 11 steps; the detector needs 9 losses to
  // judge the 9th: stop after 6.
  auto r = run_lockstep({"run", "configs/baseline.toml", "--steps", "11", "--stop-after", "6",
                         "--out", tmp / "run", "--quiet", "--no-history"},
                        tmp.path(), 300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto d = diagnose_json(tmp.path() / "run", tmp.path());
  EXPECT_EQ(d["loss_judged_from"], 0);
  EXPECT_NE(d["too_short"].get<std::string>().find("too short to judge"), std::string::npos)
      << d.dump(2);
  auto text = run_lockstep({"diagnose", tmp / "run"}, tmp.path(), 60);
  EXPECT_NE(text.output.find("too short to judge"), std::string::npos) << text.output;
  EXPECT_EQ(text.output.find("0 events"), std::string::npos) << text.output;
}

TEST(DiagnoseCli, StalledRankIsSync) {
  TempDir tmp;
  run_with_fault("configs/ddp2.toml",
                 {"faults.stall_rank=1", "faults.stall_at=" + std::to_string(kFaultStep),
                  "faults.stall_ms=1500"},
                 tmp.path() / "run", tmp.path());
  auto d = diagnose_json(tmp.path() / "run", tmp.path());
  EXPECT_EQ(d["ranks"], 2);
  expect_top_cause(d, kFaultStep, "sync");
}

TEST(DiagnoseCli, CleanRunHasNoLossOrGradientEvents) {
  TempDir tmp;
  run_with_fault("configs/baseline.toml", {}, tmp.path() / "run", tmp.path());
  auto d = diagnose_json(tmp.path() / "run", tmp.path());
  // A slow step on a busy host may still show up (as a hardware guess); nothing else may.
  for (const auto& s : d["spikes"]) EXPECT_EQ(s["kind"], "step-time spike") << s.dump(2);
}

TEST(DiagnoseCli, BadRunFolderIsAUsageError) {
  TempDir tmp;
  auto r = run_lockstep({"diagnose", (tmp.path() / "nope").string()}, tmp.path(), 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("not a run folder"), std::string::npos) << r.output;
  // A run folder whose metrics are corrupt is bad input too (it was exit 3, "a run failed").
  fs::create_directories(tmp.path() / "corrupt");
  std::ofstream(tmp.path() / "corrupt" / "metrics.jsonl") << "{\"step\": 1, \"loss\": \n";
  auto c = run_lockstep({"diagnose", (tmp.path() / "corrupt").string()}, tmp.path(), 60);
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_NE(c.output.find("metrics.jsonl:1: unreadable metrics line"), std::string::npos)
      << c.output;
  // An --out that cannot be created: one line naming it, before the folder is even read.
  auto o = run_lockstep({"diagnose", (tmp.path() / "corrupt").string(), "--out", "/proc/nope/x"},
                        tmp.path(), 60);
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_NE(o.output.find("--out /proc/nope/x: cannot create this folder"), std::string::npos)
      << o.output;
  EXPECT_EQ(std::count(o.output.begin(), o.output.end(), '\n'), 1) << o.output;
}

// The trace of a real 2-rank run against the trace-event format, and the stage planner on its
// measured per-layer costs.
TEST(TraceCheckCli, TwoRankRunTraceIsValid) {
  TempDir tmp;
  auto run =
      run_lockstep({"run", "configs/ddp2.toml", "--steps", "20", "--out", tmp / "run", "--quiet"},
                   tmp.path(), 600);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const fs::path t0 = tmp.path() / "run" / "trace.rank0.json",
                 t1 = tmp.path() / "run" / "trace.rank1.json";
  ASSERT_TRUE(fs::exists(t0) && fs::exists(t1)) << "the run wrote no per-rank traces";
  auto ok = run_lockstep({"trace-check", t0.string(), t1.string()}, tmp.path(), 120);
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("valid: 2 trace files"), std::string::npos) << ok.output;
  for (const auto& t : {t0, t1}) {
    auto doc = read_json(t);
    const auto& ev = doc.is_array() ? doc : doc["traceEvents"];
    size_t complete = 0;
    for (const auto& e : ev) complete += e.value("ph", "") == "X" ? 1 : 0;
    EXPECT_GT(complete, 20u) << t;  // at least one step span per step
  }
  // The same file twice: two files claim one pid -> invalid, exit 1.
  auto dup = run_lockstep({"trace-check", t0.string(), t0.string()}, tmp.path(), 120);
  EXPECT_EQ(dup.exit_code, 1) << dup.output;
  EXPECT_NE(dup.output.find("is also the pid of"), std::string::npos) << dup.output;
  // A complete event without dur -> invalid.
  auto doc = read_json(t1);
  auto& ev = doc.is_array() ? doc : doc["traceEvents"];
  for (auto& e : ev)
    if (e.value("ph", "") == "X") {
      e.erase("dur");
      break;
    }
  std::ofstream(tmp / "broken.json") << doc.dump();
  auto bad = run_lockstep({"trace-check", tmp / "broken.json"}, tmp.path(), 120);
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("without a numeric \"dur\""), std::string::npos) << bad.output;

  if (fs::exists(tmp.path() / "run" / "layer_costs.json")) {
    auto st = run_lockstep({"stages", tmp / "run", "--stages", "2", "--json"}, tmp.path(), 60);
    ASSERT_EQ(st.exit_code, 0) << st.output;
    auto j = json::parse(st.output.substr(st.output.find('{')));
    EXPECT_EQ(j["stages"], 2);
    EXPECT_LE(j["optimal"]["max_ms"].get<double>(), j["naive"]["max_ms"].get<double>() + 1e-9);
  }
}

TEST(StagesCli, EmbeddingHeavyModelGivesTheFirstStageFewerBlocks) {
  TempDir tmp;
  json units = json::array();
  units.push_back({{"name", "embedding"}, {"forward_ms", 12.0}, {"backward_ms", 24.0}});
  for (int i = 0; i < 8; ++i)
    units.push_back(
        {{"name", "block " + std::to_string(i)}, {"forward_ms", 3.0}, {"backward_ms", 6.0}});
  units.push_back({{"name", "head+loss"}, {"forward_ms", 4.0}, {"backward_ms", 5.0}});
  fs::create_directories(tmp.path() / "run");
  std::ofstream(tmp.path() / "run" / "layer_costs.json")
      << json{{"steps", 5}, {"units", units}}.dump(2);
  auto r = run_lockstep({"stages", tmp / "run", "--stages", "2", "--json"}, tmp.path(), 60);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(j["microbatches"], 8);
  EXPECT_LT(j["optimal"]["stages"][0]["blocks"].get<int>(),
            j["naive"]["stages"][0]["blocks"].get<int>());
  EXPECT_LT(j["optimal"]["max_ms"].get<double>(), j["naive"]["max_ms"].get<double>());
  auto text =
      run_lockstep({"stages", tmp / "run", "--stages", "3", "--microbatches", "6"}, tmp.path(), 60);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("optimal split"), std::string::npos) << text.output;
  auto too_many = run_lockstep({"stages", tmp / "run", "--stages", "9"}, tmp.path(), 60);
  EXPECT_EQ(too_many.exit_code, 2) << too_many.output;
  auto missing = run_lockstep({"stages", tmp / "nothing", "--stages", "2"}, tmp.path(), 60);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
}
