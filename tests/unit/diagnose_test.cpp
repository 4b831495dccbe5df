// harness/diagnose: event detection and cause ranking on synthetic record series (one per cause,
// and a clean one), the pipeline-stage partition, and the trace-event format check.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "harness/diagnose/causes.h"
#include "harness/diagnose/report.h"
#include "harness/diagnose/stages.h"
#include "harness/diagnose/trace_check.h"
#include "harness/runs/run_json.h"
#include "harness/stats/statistics.h"
#include "reports/diagnose/reporters.h"

namespace lockstep::diagnose {
namespace {

using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The renderers under test, on the reporter interface (reports/diagnose/reporters.h).
json to_json(const DiagnoseReport& r) {
  return reports::diagnosis_json(r);
}
std::string render_text(const DiagnoseReport& r) {
  return reports::DiagnosisConsoleReporter().render(r);
}
std::string render_markdown(const DiagnoseReport& r) {
  return reports::DiagnosisMarkdownReporter().render(r);
}
std::string render_html(const DiagnoseReport& r) {
  return reports::DiagnosisHtmlReporter().render(r);
}
std::vector<std::filesystem::path> write_diagnosis(const DiagnoseReport& r,
                                                   const std::filesystem::path& dir) {
  return reports::write_diagnosis_reports(r, dir);
}
json to_json(const StagePlan& p) {
  return reports::stages_json(p);
}
// The plan carries the costs it was made from (StagePlan::costs).
std::string render_text(const StagePlan& p, const LayerCosts&) {
  return reports::StagesConsoleReporter().render(p);
}

// Uniform noise in [-1, 1), deterministic.
struct Noise {
  stats::SplitMix64 rng;
  explicit Noise(uint64_t seed) : rng(seed) {}
  double operator()() { return static_cast<double>(rng.next() >> 11) / 4503599627370496.0 - 1.0; }
};

// A healthy run: the loss decays to ~2 with noise, LR warmup 20 then cosine, ~30 ms steps.
RunRecords clean_run(int64_t steps = 200, int world = 1, uint64_t seed = 7) {
  RunRecords run;
  Noise n(seed);
  run.ranks.resize(static_cast<size_t>(world));
  for (int64_t s = 1; s <= steps; ++s) {
    const double lr =
        s <= 20 ? 3e-3 * s / 20.0 : 3e-4 + 0.5 * 2.7e-3 * (1 + std::cos(M_PI * (s - 20) / 180.0));
    const double loss = 2.0 + 4.2 * std::exp(-s / 30.0) + 0.03 * n();
    const double gn = 0.6 + 0.05 * n();
    for (int r = 0; r < world; ++r) {
      StepRecord rec;
      rec.step = s;
      rec.rank = r;
      rec.loss = loss;
      rec.local_loss = loss + 0.05 * n();
      rec.grad_norm = gn;
      rec.lr = lr;
      rec.tokens = 2048;
      rec.timed = s > 5;
      rec.phase_ms = {{"data", 1 + 0.1 * n()},      {"forward", 10 + 0.5 * n()},
                      {"backward", 15 + 0.5 * n()}, {"comm", world > 1 ? 3 + 0.3 * n() : 0.0},
                      {"optimizer", 2 + 0.1 * n()}, {"other", 0.2 + 0.05 * n()}};
      for (const auto& [p, ms] : rec.phase_ms) rec.step_ms += ms;
      for (int u = 0; u < 5; ++u)
        rec.unit_grad_norms.push_back(gn / std::sqrt(5.0) * (1 + 0.05 * n()));
      rec.batch_entropy = 5.5 + 0.02 * n();
      rec.batch_repeat_share = 0.02 + 0.004 * n();
      rec.batch_hash = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(s * 7 + r);
      run.ranks[static_cast<size_t>(r)].push_back(rec);
    }
  }
  return run;
}

StepRecord& at(RunRecords& run, int64_t step, int rank = 0) {
  return run.ranks[static_cast<size_t>(rank)][static_cast<size_t>(step - 1)];
}

// A loss bump at `from` that decays back over a few steps (on every rank).
void loss_bump(RunRecords& run, int64_t from, double height) {
  for (int64_t s = from; s < from + 6 && s <= static_cast<int64_t>(run.main().size()); ++s)
    for (size_t r = 0; r < run.ranks.size(); ++r) {
      const double add = height * std::pow(0.5, static_cast<double>(s - from));
      at(run, s, static_cast<int>(r)).loss += add;
      at(run, s, static_cast<int>(r)).local_loss += add;
    }
}

const Diagnosis* event_near(const std::vector<Diagnosis>& ds, int64_t step, int64_t tol = 2) {
  for (const auto& d : ds)
    if (std::llabs(d.event.step - step) <= tol) return &d;
  return nullptr;
}

std::string dump(const std::vector<Diagnosis>& ds) {
  std::string s;
  for (const auto& d : ds) {
    s += "event " + std::to_string(d.event.step) + " (" + d.event.kinds() + ")\n";
    for (const auto& c : d.causes)
      s += "  " + c.cause + " " + std::to_string(c.score) + " " + c.evidence + "\n";
  }
  return s.empty() ? "no events" : s;
}

// ---- events
// --------------------------------------------------------------------------------------

TEST(DiagnoseSpikes, CleanRunHasNoEvents) {
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    auto ds = diagnose(clean_run(200, 1, seed));
    EXPECT_TRUE(ds.empty()) << "seed " << seed << "\n" << dump(ds);
    auto ds2 = diagnose(clean_run(200, 2, seed));
    EXPECT_TRUE(ds2.empty()) << "2 ranks, seed " << seed << "\n" << dump(ds2);
  }
}

TEST(DiagnoseSpikes, NearbyDetectionsMergeAtTheFirstStep) {
  std::vector<Detection> ds{{"loss", 102, 0, 0, 0, 0},
                            {"step_time", 100, 1, 0, 0, 0},
                            {"loss", 104, 0, 0, 0, 0},
                            {"loss", 110, 0, 0, 0, 0}};
  auto ev = merge(ds, 2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].step, 100);
  EXPECT_EQ(ev[0].last_step, 104);
  EXPECT_EQ(ev[0].detections.size(), 3u);
  EXPECT_EQ(ev[0].loss_step(), 102);  // causes are looked for before the loss went wrong
  EXPECT_EQ(ev[1].step, 110);
}

TEST(DiagnoseSpikes, NonFiniteLossIsAlwaysAnEvent) {
  auto run = clean_run(3);
  at(run, 2).loss = kNaN;  // too early for any rolling window: still an event
  auto ev = detect_events(run);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].step, 2);
  EXPECT_TRUE(ev[0].has("nonfinite"));
}

TEST(DiagnoseSpikes, SmallBumpBelowThresholdIsNoEvent) {
  auto run = clean_run();
  at(run, 150).loss += 0.05;  // ~1.7 noise amplitudes: ordinary
  EXPECT_TRUE(detect_events(run).empty());
}

// ---- causes: one synthetic series per cause -----------------------------------------------------

TEST(DiagnoseCauses, CorruptBatchIsData) {
  auto run = clean_run();
  at(run, 120).batch_entropy = 0;
  at(run, 120).batch_repeat_share = 1.0;
  at(run, 120).grad_norm *= 8;  // the bad batch's own gradient is large too
  loss_bump(run, 120, 4.0);
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 120, 0);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "data") << dump(ds);
  EXPECT_DOUBLE_EQ(d->causes.front().score, 1.0);
  const auto& ev = d->causes.front().evidence;
  EXPECT_NE(ev.find("batch entropy 0.00 nats vs median 5.5"), std::string::npos) << ev;
  EXPECT_NE(ev.find("repeated-token share 1.00"), std::string::npos) << ev;
  EXPECT_NE(ev.find("replay: batch_hash 0x"), std::string::npos) << ev;
}

TEST(DiagnoseCauses, LrJumpIsLr) {
  auto run = clean_run();
  at(run, 120).lr *= 30;
  loss_bump(run, 121, 3.0);  // the loss after the bad update
  at(run, 121).grad_norm *= 20;
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 121, 0);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "lr") << dump(ds);
  EXPECT_NE(d->causes.front().evidence.find("at step 120 is 29.5x step 119's"), std::string::npos)
      << d->causes.front().evidence;
  EXPECT_LT(d->causes[1].score, d->causes.front().score);
}

TEST(DiagnoseCauses, GradientBlowupIsGrad) {
  auto run = clean_run();
  at(run, 120).grad_norm *= 1000;
  at(run, 120).unit_grad_norms[3] *= 2000;
  loss_bump(run, 121, 1.0);
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 120, 0);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "grad") << dump(ds);
  EXPECT_NE(d->causes.front().evidence.find("unit 3 (block 2)"), std::string::npos)
      << d->causes.front().evidence;
}

TEST(DiagnoseCauses, GradientBlowupHiddenByClippingIsStillAnEvent) {
  auto run = clean_run();
  at(run, 120).grad_norm *= 1000;  // the loss never moves
  auto ds = diagnose(run);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].event.step, 120);
  EXPECT_EQ(ds[0].causes.front().cause, "grad");
}

TEST(DiagnoseCauses, GrowingGradientTrendIsGrad) {
  auto run = clean_run();
  // Slow enough that no single step crosses the 30x grad-norm event threshold before the loss
  // spikes.
  for (int64_t s = 110; s <= 120; ++s)
    at(run, s).grad_norm *= std::pow(1.3, static_cast<double>(s - 109));
  loss_bump(run, 121, 3.0);
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 121);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "grad") << dump(ds);
  EXPECT_NE(d->causes.front().evidence.find("trend over the 10 steps before"), std::string::npos);
}

TEST(DiagnoseCauses, NonFiniteLossIsNumerics) {
  auto run = clean_run(120);
  at(run, 120).loss = kNaN;
  at(run, 120).grad_norm = kNaN;
  at(run, 120).nonfinite_grads = 123456;
  at(run, 120).overflow = true;
  auto ds = diagnose(run);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].event.step, 120);
  EXPECT_EQ(ds[0].causes.front().cause, "numerics") << dump(ds);
  EXPECT_NE(ds[0].causes.front().evidence.find("123456 non-finite gradient element(s)"),
            std::string::npos);
}

TEST(DiagnoseCauses, SlowStepOnOneRankWithNothingElseIsHardware) {
  auto run = clean_run();
  at(run, 150).phase_ms["other"] += 600;
  at(run, 150).step_ms += 600;
  auto ds = diagnose(run);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].event.step, 150);
  EXPECT_EQ(ds[0].causes.front().cause, "hardware") << dump(ds);
  EXPECT_NE(ds[0].causes.front().evidence.find("a guess"), std::string::npos);
}

TEST(DiagnoseCauses, AllRanksSlowTogetherIsHardwareNotSync) {
  auto run = clean_run(200, 2);
  for (int r = 0; r < 2; ++r)
    at(run, 150, r).phase_ms["forward"] += 400, at(run, 150, r).step_ms += 400;
  auto ds = diagnose(run);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].causes.front().cause, "hardware") << dump(ds);
}

TEST(DiagnoseCauses, StragglerRankIsSync) {
  auto run = clean_run(200, 2);
  at(run, 120, 1).phase_ms["other"] += 1500;  // rank 1 sleeps after the step's collectives
  at(run, 120, 1).step_ms += 1500;
  at(run, 121, 0).phase_ms["comm"] += 1495;  // rank 0 waits at the next collective
  at(run, 121, 0).step_ms += 1495;
  auto ds = diagnose(run);
  ASSERT_EQ(ds.size(), 1u) << dump(ds);
  EXPECT_EQ(ds[0].event.step, 120);
  EXPECT_EQ(ds[0].causes.front().cause, "sync") << dump(ds);
  EXPECT_GT(ds[0].causes.front().score, 0.9);
  const auto& ev = ds[0].causes.front().evidence;
  EXPECT_NE(ev.find("rank 1's own time"), std::string::npos) << ev;
  EXPECT_NE(ev.find("rank 0 waited in comm"), std::string::npos) << ev;
}

TEST(DiagnoseCauses, LocalLossDisagreementIsSync) {
  auto run = clean_run(200, 2);
  at(run, 130, 1).local_loss += 7.0;
  at(run, 130, 0).loss += 3.5;  // the global mean moves with it
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 130, 0);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "sync") << dump(ds);
  EXPECT_NE(d->causes.front().evidence.find("local losses disagree"), std::string::npos);
}

TEST(DiagnoseCauses, WarmupEndNearTheSpikeScoresLrModestly) {
  auto run = clean_run();
  loss_bump(run, 25, 6.0);  // 5 steps after the end of warmup (step 20)
  auto ds = diagnose(run);
  const auto* d = event_near(ds, 25, 0);
  ASSERT_NE(d, nullptr) << dump(ds);
  EXPECT_EQ(d->causes.front().cause, "lr") << dump(ds);
  EXPECT_DOUBLE_EQ(d->causes.front().score, 0.15);  // 0.25 * (1 - (5 - 1) / 10)
  EXPECT_NE(d->causes.front().evidence.find("warmup ended at step 20"), std::string::npos);
  EXPECT_FALSE(d->explained());
}

TEST(DiagnoseCauses, TiesFollowTheStandardOrder) {
  std::vector<Cause> cs;
  for (auto it = cause_order().rbegin(); it != cause_order().rend(); ++it)
    cs.push_back({*it, 0.5, ""});
  cs.push_back({"grad", 0.9, ""});
  sort_causes(cs);
  ASSERT_EQ(cs.size(), 7u);
  EXPECT_EQ(cs[0].cause, "grad");
  std::vector<std::string> rest;
  for (size_t i = 1; i < cs.size(); ++i) rest.push_back(cs[i].cause);
  EXPECT_EQ(rest, cause_order());
}

TEST(DiagnoseCauses, EveryCauseIsScoredForEveryEvent) {
  auto run = clean_run();
  at(run, 120).lr *= 30;
  loss_bump(run, 121, 3.0);
  for (const auto& d : diagnose(run)) {
    ASSERT_EQ(d.causes.size(), 6u);
    for (const auto& c : d.causes) {
      EXPECT_GE(c.score, 0);
      EXPECT_LE(c.score, 1);
      EXPECT_FALSE(c.evidence.empty()) << c.cause;
    }
  }
}

// ---- report
// ---------------------------------------------------------------------------------------

TEST(DiagnoseReport, JsonHasTheContractSchema) {
  auto run = clean_run();
  at(run, 120).lr *= 30;
  loss_bump(run, 121, 3.0);
  auto r = diagnose_records(run);
  json j = to_json(r);
  ASSERT_TRUE(j["spikes"].is_array());
  ASSERT_EQ(j["spikes"].size(), 1u);
  const auto& s = j["spikes"][0];
  EXPECT_EQ(s["step"], 121);
  ASSERT_EQ(s["causes"].size(), 6u);
  double prev = 2;
  for (const auto& c : s["causes"]) {
    EXPECT_TRUE(c["cause"].is_string());
    EXPECT_TRUE(c["score"].is_number());
    EXPECT_TRUE(c["evidence"].is_string());
    EXPECT_LE(c["score"].get<double>(), prev);
    prev = c["score"].get<double>();
  }
  EXPECT_EQ(s["causes"][0]["cause"], "lr");
  EXPECT_NE(render_text(r).find("step 121"), std::string::npos);
  EXPECT_NE(render_markdown(r).find("| 1 | lr |"), std::string::npos);
}

TEST(DiagnoseReport, HtmlIsSelfContainedAndMarksTheSpike) {
  auto run = clean_run();
  at(run, 120).lr *= 30;
  loss_bump(run, 121, 3.0);
  auto html = render_html(diagnose_records(run));
  EXPECT_NE(html.find("<h2>Step 121"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  for (const char* ext :
       {"src=\"http", "href=\"http", "src='http", "href='http", "<link rel=\"stylesheet"})
    EXPECT_EQ(html.find(ext), std::string::npos) << ext;  // nothing loaded from outside the page
  // The loss plot, or why it is unavailable (no gnuplot): the page renders either way.
  EXPECT_TRUE(html.find("step 121: lr") != std::string::npos ||
              html.find("plot unavailable") != std::string::npos);
}

TEST(DiagnoseReport, ReadsEveryRankFileAndWritesAtomically) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("lockstep-diag-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  auto run = clean_run(200, 2);
  at(run, 120, 1).phase_ms["other"] += 1500, at(run, 120, 1).step_ms += 1500;
  at(run, 121, 0).phase_ms["comm"] += 1495, at(run, 121, 0).step_ms += 1495;
  for (int r = 0; r < 2; ++r) {
    std::ofstream out(dir / (r == 0 ? std::string("metrics.jsonl")
                                    : "metrics.rank" + std::to_string(r) + ".jsonl"));
    for (const auto& rec : run.ranks[static_cast<size_t>(r)])
      out << runs::to_json(rec).dump() << "\n";
  }
  auto rep = diagnose_run(dir);
  EXPECT_EQ(rep.run.world(), 2);
  ASSERT_EQ(rep.diagnoses.size(), 1u);
  EXPECT_EQ(rep.diagnoses[0].causes.front().cause, "sync");
  auto files = write_diagnosis(rep, dir / "out");
  for (const auto& f : files) EXPECT_TRUE(fs::exists(f)) << f;
  for (const auto& e : fs::directory_iterator(dir / "out"))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos);
  EXPECT_THROW(diagnose_run(dir / "missing"), std::runtime_error);
  fs::remove_all(dir);
}

// ---- stages
// ---------------------------------------------------------------------------------------

LayerCosts costs(double emb, const std::vector<double>& blocks, double head) {
  LayerCosts c;
  c.steps = 10;
  c.units.push_back({"embedding", emb * 0.4, emb * 0.6});
  for (size_t i = 0; i < blocks.size(); ++i)
    c.units.push_back({"block " + std::to_string(i), blocks[i] / 3, blocks[i] * 2 / 3});
  c.units.push_back({"head+loss", head / 2, head / 2});
  return c;
}

TEST(DiagnoseStages, EmbeddingHeavyFirstStageGetsFewerBlocks) {
  auto c = costs(40, std::vector<double>(8, 10), 20);
  auto p = plan_stages(c, 2);
  EXPECT_EQ(p.microbatches, 8);
  ASSERT_EQ(p.naive.stages.size(), 2u);
  EXPECT_EQ(p.naive.stages[0].last_block, 3u);  // 4 + 4 blocks
  EXPECT_NEAR(p.naive.max_ms, 80, 1e-9);        // embedding + 4 blocks
  EXPECT_NEAR(p.optimal.max_ms, 70, 1e-9);      // embedding + 3 blocks | 5 blocks + head
  EXPECT_LT(p.optimal.stages[0].last_block - p.optimal.stages[0].first_block,
            p.naive.stages[0].last_block - p.naive.stages[0].first_block);
  EXPECT_TRUE(p.optimal.stages[0].has_embedding);
  EXPECT_TRUE(p.optimal.stages[1].has_head);
  EXPECT_NEAR(p.naive.imbalance_pct, (80.0 / 70.0 - 1) * 100, 1e-9);
  EXPECT_NEAR(p.optimal.imbalance_pct, 0, 1e-9);
  // GPipe: step = (m + P - 1) * max / m, bubble share (P - 1) / (m + P - 1).
  EXPECT_NEAR(p.optimal.step_ms, 9.0 * 70 / 8, 1e-9);
  EXPECT_NEAR(p.optimal.bubble_share, 1.0 / 9, 1e-12);
  EXPECT_NEAR(p.optimal.efficiency, 70 / (9.0 * 70 / 8), 1e-12);
  EXPECT_NEAR(p.speedup, 80.0 / 70.0, 1e-9);
  EXPECT_EQ(p.optimal.stages[0].units(), "embedding + blocks 0-2");
  auto j = to_json(p);
  EXPECT_EQ(j["optimal"]["stages"][0]["blocks"], 3);
  EXPECT_NE(render_text(p, c).find("optimal split"), std::string::npos);
}

TEST(DiagnoseStages, OptimalMatchesBruteForceOnSmallCases) {
  Noise n(99);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t B = 1 + static_cast<size_t>((n() + 1) * 4);  // 1..8
    std::vector<double> blocks;
    for (size_t i = 0; i < B; ++i) blocks.push_back(1 + 9 * (n() + 1) / 2);
    auto c = costs(20 * (n() + 1), blocks, 20 * (n() + 1));
    for (int64_t P = 1; P <= static_cast<int64_t>(B); ++P) {
      double best = INFINITY;
      // every composition of B into P positive parts: choose P-1 cut points among B-1
      std::function<void(size_t, std::vector<size_t>&)> rec = [&](size_t left,
                                                                  std::vector<size_t>& sizes) {
        if (sizes.size() + 1 == static_cast<size_t>(P)) {
          sizes.push_back(left);
          best = std::min(best, split_from_sizes(c, sizes, 1).max_ms);
          sizes.pop_back();
          return;
        }
        for (size_t k = 1; k + (static_cast<size_t>(P) - sizes.size() - 1) <= left; ++k) {
          sizes.push_back(k);
          rec(left - k, sizes);
          sizes.pop_back();
        }
      };
      std::vector<size_t> sizes;
      rec(B, sizes);
      auto p = plan_stages(c, P);
      EXPECT_NEAR(p.optimal.max_ms, best, 1e-9) << "B=" << B << " P=" << P;
      EXPECT_LE(p.optimal.max_ms, p.naive.max_ms + 1e-12);
    }
  }
}

TEST(DiagnoseStages, NaiveSplitIsEven) {
  EXPECT_EQ(naive_sizes(8, 3), (std::vector<size_t>{3, 3, 2}));
  EXPECT_EQ(naive_sizes(4, 4), (std::vector<size_t>{1, 1, 1, 1}));
  EXPECT_THROW(naive_sizes(3, 4), std::invalid_argument);
  EXPECT_THROW(plan_stages(costs(1, {1, 1}, 1), 0), std::invalid_argument);
}

TEST(DiagnoseStages, LayerCostsFileIsValidated) {
  json ok = {{"steps", 5},
             {"units",
              {{{"name", "embedding"}, {"forward_ms", 1}, {"backward_ms", 2}},
               {{"name", "block 0"}, {"forward_ms", 3}, {"backward_ms", 4}},
               {{"name", "head+loss"}, {"forward_ms", 5}, {"backward_ms", 6}}}}};
  auto c = layer_costs_from_json(ok);
  EXPECT_EQ(c.blocks(), 1u);
  EXPECT_EQ(c.steps, 5);
  json bad = ok;
  bad["units"][0]["name"] = "block x";
  EXPECT_THROW(layer_costs_from_json(bad), std::runtime_error);
  bad = ok;
  bad["units"][1]["backward_ms"] = -1;
  EXPECT_THROW(layer_costs_from_json(bad), std::runtime_error);
  bad = ok;
  bad["units"].erase(1);
  EXPECT_THROW(layer_costs_from_json(bad), std::runtime_error);
  EXPECT_THROW(layer_costs_from_json(json::array()), std::runtime_error);
}

// ---- trace check
// ----------------------------------------------------------------------------------

json valid_trace(int pid = 0) {
  return json{
      {"traceEvents",
       {{{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "rank 0"}}}},
        {{"name", "thread_name"},
         {"ph", "M"},
         {"pid", pid},
         {"tid", 0},
         {"args", {{"name", "trainer"}}}},
        {{"name", "step 1"}, {"ph", "X"}, {"ts", 0}, {"dur", 100}, {"pid", pid}, {"tid", 0}},
        {{"name", "forward"}, {"ph", "B"}, {"ts", 1}, {"pid", pid}, {"tid", 0}},
        {{"name", "matmul"}, {"ph", "B"}, {"ts", 2}, {"pid", pid}, {"tid", 0}},
        {{"ph", "E"}, {"name", "matmul"}, {"ts", 5}, {"pid", pid}, {"tid", 0}},
        {{"ph", "E"}, {"name", "forward"}, {"ts", 50}, {"pid", pid}, {"tid", 0}},
        {{"name", "mark"}, {"ph", "i"}, {"ts", 60}, {"pid", pid}, {"tid", 1}, {"s", "t"}}}},
      {"displayTimeUnit", "ms"}};
}

TEST(TraceCheck, ValidDocumentsPass) {
  EXPECT_TRUE(check_trace(valid_trace()).empty());
  EXPECT_TRUE(check_trace(valid_trace()["traceEvents"]).empty());  // the array form
  EXPECT_TRUE(check_trace(json::array()).empty());
}

TEST(TraceCheck, EachRuleViolatedOnceIsOneError) {
  struct Case {
    const char* name;
    std::function<void(json&)> break_it;
    const char* expect;
  };
  const std::vector<Case> cases{
      {"missing name", [](json& e) { e[2].erase("name"); }, "missing \"name\""},
      {"missing ph", [](json& e) { e[2].erase("ph"); }, "missing \"ph\""},
      {"missing ts", [](json& e) { e[2].erase("ts"); }, "\"ts\""},
      {"missing pid", [](json& e) { e[2].erase("pid"); }, "missing \"pid\""},
      {"missing tid", [](json& e) { e[2].erase("tid"); }, "missing \"tid\""},
      {"X without dur", [](json& e) { e[2].erase("dur"); }, "without a numeric \"dur\""},
      {"X negative dur", [](json& e) { e[2]["dur"] = -1; }, "negative \"dur\""},
      {"unknown phase", [](json& e) { e[7]["ph"] = "Q"; }, "unknown phase"},
      {"E without B",
       [](json& e) {
         e.push_back({{"ph", "E"}, {"name", "x"}, {"ts", 70}, {"pid", 0}, {"tid", 3}});
       },
       "without an open \"B\""},
      {"B never closed",
       [](json& e) {
         e.push_back({{"ph", "B"}, {"name", "open"}, {"ts", 70}, {"pid", 0}, {"tid", 0}});
       },
       "never closed"},
      {"E closes the wrong B",
       [](json& e) {
         std::swap(e[5], e[6]);
         e[5]["ts"] = 5;
         e[6]["ts"] = 50;
       },
       "not nested"},
      {"E before its B", [](json& e) { e[6]["ts"] = 0.5; }, "before its \"B\""},
  };
  for (const auto& c : cases) {
    json doc = valid_trace();
    c.break_it(doc["traceEvents"]);
    auto errs = check_trace(doc, "t.json");
    // Swapping the E events breaks nesting twice (both closers mismatch): one rule, two events.
    ASSERT_FALSE(errs.empty()) << c.name;
    if (std::string(c.name) != "E closes the wrong B") {
      EXPECT_EQ(errs.size(), 1u) << c.name << ": " << errs[0];
    }
    EXPECT_NE(errs[0].find(c.expect), std::string::npos) << c.name << ": " << errs[0];
    EXPECT_EQ(errs[0].rfind("t.json: ", 0), 0u) << errs[0];
  }
  // Metadata events may omit ts, and the ph check applies to them too.
  json doc = valid_trace();
  doc["traceEvents"][0]["ts"] = "zero";
  EXPECT_EQ(check_trace(doc).size(), 1u);
  EXPECT_FALSE(check_trace(json{{"events", json::array()}}).empty());
  EXPECT_FALSE(check_trace(json{{"traceEvents", 3}}).empty());
  EXPECT_FALSE(check_trace(json::array({1})).empty());
}

TEST(TraceCheck, PerRankFilesHaveOnePidEachAndDistinctPids) {
  namespace fs = std::filesystem;
  fs::path dir =
      fs::temp_directory_path() / ("lockstep-trace-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const json& j) {
    std::ofstream(dir / name) << j.dump();
    return dir / name;
  };
  auto r0 = write("trace.rank0.json", valid_trace(0));
  auto r1 = write("trace.rank1.json", valid_trace(1));
  EXPECT_TRUE(check_trace_files({r0, r1}).empty());
  auto dup = write("dup.json", valid_trace(0));
  auto errs = check_trace_files({r0, dup});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("is also the pid of"), std::string::npos) << errs[0];
  json two = valid_trace(0);
  two["traceEvents"].push_back(
      {{"name", "x"}, {"ph", "X"}, {"ts", 1}, {"dur", 1}, {"pid", 5}, {"tid", 0}});
  errs = check_trace_files({write("two.json", two)});
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("2 pids"), std::string::npos) << errs[0];
  std::ofstream(dir / "torn.json") << "{\"traceEvents\": [";
  EXPECT_EQ(check_trace_files({dir / "torn.json"}).size(), 1u);
  EXPECT_EQ(check_trace_files({dir / "missing.json"}).size(), 1u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::diagnose
