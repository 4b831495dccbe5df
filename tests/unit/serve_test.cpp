// The serving workload's torch-free parts (issue 37): the load, the batcher and its workers, the
// clients, the figures and the gate, with a stand-in service (no model): the server, its threads
// and the clock are real.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/config/config.h"
#include "harness/serve/batch_plan.h"
#include "harness/serve/drive.h"
#include "harness/serve/figures.h"
#include "harness/serve/load.h"
#include "harness/serve/serve_diagnosis.h"
#include "harness/serve/verdict.h"
#include "harness/util/clock.h"

namespace lockstep::serve {
namespace {

namespace fs = std::filesystem;

config::Config parse(const std::string& text) {
  return config::Config::parse("[model]\npreset = \"small\"\n" + text, "serve.toml");
}

ServeConfig one_lane(double rate, double duration) {
  const auto c = parse("[serve]\nrate_rps = " + std::to_string(rate) + "\nduration_s = " +
                       std::to_string(duration) +
                       "\nlong_share = 0.0\n[[serve.lanes]]\nmax_len = 128\nmax_batch_size = 64\n"
                       "max_wait_ms = 0\n");
  return ServeConfig::from(c);
}

// Answers at once, except once: the first batch holding a request due at or after stall_at_s
// sleeps stall_ms (a GC pause, a page fault storm, a stuck kernel).
class StallingService : public Service {
 public:
  StallingService(double stall_at_s, int stall_ms) : at_(stall_at_s), ms_(stall_ms) {}
  void run(int, const std::vector<const Request*>& batch, int64_t,
           std::vector<double>& scores) override {
    for (size_t i = 0; i < batch.size(); ++i) scores[i] = static_cast<double>(batch[i]->id);
    bool due = false;
    for (const Request* r : batch) due = due || r->arrival_s >= at_;
    if (due && !stalled_.exchange(true)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms_));
      stall_end_ns = util::steady_now_ns();
    }
  }
  std::atomic<int64_t> stall_end_ns{0};

 private:
  double at_;
  int ms_;
  std::atomic<bool> stalled_{false};
};

int64_t later_than(const Window& w, double ms) {
  int64_t n = 0;
  for (const auto& o : w.outcomes) n += o.fate == Fate::Served && o.latency_s * 1e3 > ms;
  return n;
}

// The must-show: a server stall of S ms is charged in full to every request due during it. At
// 1000 requests/s a 300 ms stall delays ~300 requests; open loop, each one's latency counts from
// its scheduled time, so every request due in the stall's first half is over 150 ms late. The
// same stall under a closed-loop client shows in one request only: the client simply stopped
// sending (coordinated omission), and its P99 hides the stall.
TEST(Serve, AStallIsChargedInFullToEveryRequestDueDuringIt) {
  const ServeConfig cfg = one_lane(1000, 1.2);
  const auto schedule = make_schedule(cfg, 7);
  StallingService open_svc(0.4, 300);
  const Window open = open_loop(cfg, schedule, open_svc);
  int64_t due_in_first_half = 0;
  for (const auto& o : open.outcomes) {
    ASSERT_EQ(o.fate, Fate::Served);
    if (o.scheduled_s >= 0.4 && o.scheduled_s < 0.55) {
      ++due_in_first_half;
      EXPECT_GT(o.latency_s, 0.15) << "request " << o.id << " due at " << o.scheduled_s;
    }
  }
  EXPECT_GT(due_in_first_half, 100);  // ~150 expected at 1000/s
  EXPECT_GE(later_than(open, 150), due_in_first_half);
  const auto open_fig = window_figures(cfg, open.outcomes, open.duration_s).front();
  EXPECT_GT(open_fig.p99.ms, 150);

  StallingService closed_svc(0.4, 300);
  const Window closed = closed_loop(cfg, schedule, closed_svc);
  EXPECT_LE(later_than(closed, 150), 2);  // the omission: one slow request, the rest never sent
  const auto closed_fig = window_figures(cfg, closed.outcomes, closed.duration_s).front();
  EXPECT_LT(closed_fig.p99.ms, 150) << "a closed loop hides the stall from its P99";
}

TEST(Serve, TheSameSeedGivesTheSameRequestsAtTheSameTimes) {
  ServeConfig cfg = one_lane(200, 10);
  cfg.long_share = 0.1, cfg.long_min_len = 64, cfg.long_max_len = 128;
  const auto a = make_schedule(cfg, 42), b = make_schedule(cfg, 42), c = make_schedule(cfg, 43);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].len, b[i].len);
  }
  EXPECT_NE(a.size() == c.size() && a[0].arrival_s == c[0].arrival_s, true);
  // Poisson: about rate x duration arrivals (2000, sd 45), a tenth of them long.
  EXPECT_NEAR(static_cast<double>(a.size()), 2000, 5 * 45);
  double longs = 0;
  for (const auto& r : a) longs += r.len >= 64;
  EXPECT_NEAR(longs / static_cast<double>(a.size()), 0.1, 0.03);
  std::vector<int64_t> t1(32), t2(32);
  fill_tokens(42, 5, 32, 2048, t1.data());
  fill_tokens(42, 5, 32, 2048, t2.data());
  EXPECT_EQ(t1, t2);
  for (int64_t t : t1) EXPECT_TRUE(t >= 0 && t < 2048);
}

TEST(Serve, ThePeakWindowMultipliesTheRate) {
  ServeConfig cfg = one_lane(100, 20);
  cfg.peak_multiplier = 5, cfg.peak_start_s = 10, cfg.peak_duration_s = 5;
  const auto s = make_schedule(cfg, 1);
  double in_peak = 0, before = 0;
  for (const auto& r : s) {
    in_peak += r.arrival_s >= 10 && r.arrival_s < 15;
    before += r.arrival_s >= 5 && r.arrival_s < 10;
  }
  EXPECT_NEAR(in_peak / before, 5.0, 1.0);  // 2500 vs 500 expected
  EXPECT_NEAR(in_peak, 2500, 5 * 50);
}

TEST(Serve, ARequestTooLongForEveryLaneIsRejectedAndCounted) {
  const auto c = parse(
      "[serve]\nrate_rps = 500\nduration_s = 0.5\nlong_share = 0.3\nlong_min_len = 100\n"
      "long_max_len = 128\n[[serve.lanes]]\nmax_len = 64\nmax_wait_ms = 0\n");
  const ServeConfig cfg = ServeConfig::from(c);
  const auto schedule = make_schedule(cfg, 3);
  int64_t too_long = 0;
  for (const auto& r : schedule) too_long += r.len > 64;
  ASSERT_GT(too_long, 0);
  StallingService svc(1e9, 0);
  const Window w = open_loop(cfg, schedule, svc);
  const auto f = window_figures(cfg, w.outcomes, w.duration_s);
  EXPECT_EQ(f[0].rejected, too_long);
  EXPECT_EQ(f[0].served + f[0].rejected, static_cast<int64_t>(schedule.size()));
  EXPECT_EQ(f[1].rejected, 0);  // the lane never saw them
  EXPECT_LT(f[0].slo_attainment, 1.0);  // a rejected request misses the SLO
}

TEST(Serve, LanesBatchByLengthBucketAndCountThePadding) {
  const auto c = parse(
      "[serve]\nrate_rps = 2000\nduration_s = 0.3\nlong_share = 0.5\nshort_min_len = 1\n"
      "short_max_len = 16\nlong_min_len = 17\nlong_max_len = 128\nbucket_tokens = 16\n"
      "[[serve.lanes]]\nname = \"short\"\nmax_len = 16\nmax_batch_size = 4\nmax_wait_ms = 2\n"
      "[[serve.lanes]]\nname = \"long\"\nmax_len = 128\nmax_batch_size = 8\nmax_wait_ms = 2\n"
      "priority = 5\n");
  const ServeConfig cfg = ServeConfig::from(c);
  StallingService svc(1e9, 0);
  const Window w = open_loop(cfg, make_schedule(cfg, 9), svc);
  for (const auto& o : w.outcomes) {
    ASSERT_EQ(o.fate, Fate::Served);
    EXPECT_EQ(o.lane, o.len <= 16 ? 0 : 1);
    EXPECT_LE(o.batch_size, o.lane == 0 ? 4 : 8);
    EXPECT_GE(o.padded_len, o.len);
    EXPECT_EQ((o.padded_len - 1) / 16, (o.len - 1) / 16) << "one bucket per batch";
  }
  const auto f = window_figures(cfg, w.outcomes, w.duration_s);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[1].lane, "short");
  EXPECT_GT(f[0].padding_share, 0.0);
  EXPECT_LT(f[0].padding_share, 0.5);
}

// The throughput check's batches (batch_plan.h): per lane and length bucket, full batches in
// order, the partial ones last, each padded to its longest; a request no lane takes is left out.
TEST(Serve, TheSpeedTurnsBatchAsASaturatedBatcherWould) {
  ServeConfig c;
  c.bucket_tokens = 16;
  c.lanes = {LaneConfig{"short", 1, 32, 0, 2, 5.0, 1}, LaneConfig{"long", 33, 128, 5, 3, 5.0, 1}};
  std::vector<Request> set;
  for (int64_t len : {10, 12, 40, 20, 100, 14, 50, 130, 45, 36})
    set.push_back(Request{static_cast<int64_t>(set.size()), 0, len, c.lane_of(len)});
  const auto plan = plan_batches(c, set);
  std::vector<std::vector<int64_t>> lens;
  std::vector<int64_t> pads;
  for (const auto& b : plan) {
    lens.emplace_back();
    for (const Request* r : b.requests) lens.back().push_back(r->len);
    pads.push_back(b.padded_len);
  }
  // Full first: short bucket 0 (10, 12); long bucket 2 (40, 45, 36: 33..48). Then the partials
  // by (lane, bucket): short 0 (14), short 1 (20), long 3 (50), long 6 (100). 130 has no lane.
  const std::vector<std::vector<int64_t>> want{{10, 12}, {40, 45, 36}, {14}, {20}, {50}, {100}};
  EXPECT_EQ(lens, want);
  EXPECT_EQ(pads, (std::vector<int64_t>{12, 45, 14, 20, 50, 100}));
  EXPECT_EQ(plan[1].lane, 1);
  EXPECT_EQ(real_tokens(plan), 10 + 12 + 40 + 45 + 36 + 14 + 20 + 50 + 100);
  EXPECT_EQ(padded_tokens(plan), 24 + 135 + 14 + 20 + 50 + 100);
}

// A serving arm as `serve --json` writes it, with only what the diagnosis reads.
nlohmann::json arm(double p99_ms, double queue_share, double lane_queue_p99, int64_t unserved) {
  nlohmann::json lane{{"lane", "one"},
                      {"queue_wait_ms", {{"p50", 1.0}, {"p99", lane_queue_p99}}},
                      {"service_ms", {{"p50", 10.0}, {"p99", 40.0}}}};
  nlohmann::json all{{"lane", "all"},
                     {"latency_ms", {{"p99", {{"ms", p99_ms}}}}},
                     {"slo_ms", 200.0},
                     {"slo_attainment", 0.9},
                     {"padding_share", 0.45}};
  return {{"label", "serve"},
          {"config", "s.toml"},
          {"load", {{"lanes", {{{"name", "one"}, {"max_wait_ms", 20.0}}}}}},
          {"figures", {all, lane}},
          {"tail", {{"requests", 30}, {"queue_share", queue_share}, {"unserved", unserved},
                    {"lanes", {{"one", 30}}}}}};
}

// `diagnose` on a serving run names the tail's cause from what the run wrote: each rule once.
TEST(Serve, TheDiagnosisNamesWhereTheTailCameFrom) {
  auto cause = [](const nlohmann::json& a) { return diagnose_serving(a).at(0).cause; };
  EXPECT_EQ(cause(arm(150, 0.9, 500, 0)), "none");        // within the SLO
  EXPECT_EQ(cause(arm(450, 0.9, 420, 0)), "capacity");    // queue wait far beyond max_wait_ms
  EXPECT_EQ(cause(arm(250, 0.8, 35, 0)), "threshold");    // queue wait within 2 x max_wait_ms
  EXPECT_EQ(cause(arm(250, 0.2, 10, 0)), "service");      // service time
  EXPECT_EQ(cause(arm(450, 0.9, 420, 7)), "unserved");
  const auto f = diagnose_serving(arm(450, 0.9, 420, 0)).at(0);
  EXPECT_EQ(f.lane, "one");
  EXPECT_EQ(f.lane_queue_p99_ms, 420);
  EXPECT_EQ(f.lane_max_wait_ms, 20);
  EXPECT_NE(f.advice.find("lane \"one\""), std::string::npos) << f.advice;
  nlohmann::json cmp{{"kind", "serve"}, {"baseline", arm(450, 0.9, 420, 0)},
                     {"variant", arm(150, 0.9, 100, 0)}};
  cmp["baseline"]["label"] = "baseline", cmp["variant"]["label"] = "variant";
  const auto two = diagnose_serving(cmp);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].arm, "baseline");
  EXPECT_EQ(two[1].cause, "none");
  EXPECT_THROW(diagnose_serving(nlohmann::json{{"kind", "serve"}}), std::runtime_error);
  EXPECT_THROW(diagnose_serving(nlohmann::json::object()), std::runtime_error);
}

TEST(Serve, AnUnservedRequestIsInfinitelyLateNeverDropped) {
  std::vector<double> ms(98, 10.0);
  ms.push_back(INFINITY), ms.push_back(INFINITY);
  EXPECT_EQ(latency_quantile(ms, 0.5).ms, 10.0);
  EXPECT_TRUE(std::isinf(latency_quantile(ms, 0.99).ms));
  std::vector<double> few{1, 2, 3, 4, 5};
  EXPECT_TRUE(latency_quantile(few, 0.99).is_max);
  EXPECT_EQ(latency_quantile(few, 0.99).ms, 5.0);
  std::vector<double> many(2000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i + 1);
  const auto q = latency_quantile(many, 0.99);
  EXPECT_EQ(q.ms, 1980.0);
  EXPECT_FALSE(q.is_max);
  EXPECT_LT(q.lo_ms, 1980.0);
  EXPECT_GT(q.hi_ms, 1980.0);
}

// The reports' curves: every offered request in the CDF (unserved ones as +inf, last), and the
// P99 grouped by the offered rate when each request was due: off-peak and peak apart.
TEST(Serve, TheLoadCurveGroupsRequestsByTheOfferedRateAtTheirArrival) {
  auto cfg = one_lane(100, 3);
  cfg.peak_multiplier = 3, cfg.peak_start_s = 1, cfg.peak_duration_s = 1;
  std::vector<Outcome> w;
  for (int i = 0; i < 300; ++i) {
    Outcome o;
    o.id = i;
    o.scheduled_s = 3.0 * i / 300;
    o.fate = Fate::Served;
    const bool peak = o.scheduled_s >= 1 && o.scheduled_s < 2;
    o.latency_s = (peak ? 0.100 : 0.010) + 1e-5 * i;
    w.push_back(o);
  }
  w[250].fate = Fate::Unserved;  // off-peak, never served
  const auto points = p99_by_offered_load(cfg, {w, w});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].rate_rps, 100.0);
  EXPECT_EQ(points[0].requests, 400);  // 200 off-peak requests per window, two windows
  EXPECT_EQ(points[1].rate_rps, 300.0);
  EXPECT_EQ(points[1].requests, 200);
  // Off-peak: 2 of 400 are unserved (1 per window): the P99 rank (396) is served; the largest
  // served off-peak latency is request 299's.
  EXPECT_NEAR(points[0].p99.ms, 10.0 + 1e-2 * 298, 1e-9);
  EXPECT_NEAR(points[1].p99.ms, 100.0 + 1e-2 * 198, 1e-9);  // rank 198 of 200: request 198
  const auto all = latencies_ms({w, w});
  ASSERT_EQ(all.size(), 600u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_TRUE(std::isinf(all[598]) && std::isinf(all[599]));
  EXPECT_TRUE(std::isfinite(all[597]));
}

std::vector<WindowStats> windows(std::vector<double> p99, double thr, double slo) {
  std::vector<WindowStats> out;
  for (double p : p99) out.push_back(WindowStats{p, thr, slo});
  return out;
}

TEST(Serve, TheGateFailsAWorseP99AndPassesAnEqualOne) {
  const auto a = windows({100, 120, 90, 110, 105}, 1000, 0.99);
  auto worse = windows({121, 143, 110, 131, 127}, 1000, 0.99);  // +20% in every pair
  const std::vector<double> s{-1.5, -2.5};
  SpeedTurns even;
  even.baseline_s = even.variant_s = {0.30, 0.31, 0.29, 0.30, 0.32, 0.30};
  const auto c = judge(a, worse, even, s, s, GateSettings{});
  EXPECT_EQ(c[0].name, "p99 latency");
  EXPECT_EQ(c[0].verdict, compare::Verdict::Fail);
  EXPECT_NEAR(c[0].value_pct, 20.5, 1.0);
  EXPECT_EQ(c[3].verdict, compare::Verdict::Pass);
  const auto same = judge(a, a, even, s, s, GateSettings{});
  for (const auto& k : same) EXPECT_NE(k.verdict, compare::Verdict::Fail) << k.name;
  EXPECT_EQ(same[1].verdict, compare::Verdict::Pass);
  SpeedTurns slower = even;  // the variant 5% slower in every pair, give or take 0.5%
  slower.variant_s = {0.315, 0.327, 0.303, 0.316, 0.335, 0.316};
  const auto c_slow = judge(a, a, slower, s, s, GateSettings{});
  EXPECT_EQ(c_slow[1].verdict, compare::Verdict::Fail);
  EXPECT_NEAR(c_slow[1].value_pct, -4.9, 0.3);
  const std::vector<double> off{-1.5, -2.5 + 1e-3};
  EXPECT_EQ(judge(a, a, even, s, off, GateSettings{})[3].verdict, compare::Verdict::Fail);
}

// serve.throughput_check = "capacity": the capacity check takes the throughput check's place,
// judged on the paired log capacity ratio of the searches.
TEST(Serve, TheCapacityCheckJudgesSearchPairs) {
  const auto a = windows({100, 120, 90, 110, 105}, 1000, 0.99);
  const std::vector<double> s{-1.5, -2.5};
  SpeedTurns none;
  CapacityPairs equal{200, {300, 310, 290, 305}, {301, 309, 292, 303}};
  auto c = judge(a, a, none, s, s, GateSettings{}, &equal);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[1].name, "capacity");
  EXPECT_NE(c[1].verdict, compare::Verdict::Fail);
  EXPECT_NE(c[1].detail.find("capacity at P99 <= 200 ms"), std::string::npos) << c[1].detail;
  EXPECT_NE(c[1].detail.find("over 4 search pairs"), std::string::npos) << c[1].detail;
  CapacityPairs lower{200, {300, 310, 290, 305}, {240, 251, 230, 247}};  // -20% in every pair
  c = judge(a, a, none, s, s, GateSettings{}, &lower);
  EXPECT_EQ(c[1].verdict, compare::Verdict::Fail);
  EXPECT_NEAR(c[1].value_pct, -19.6, 0.5);
  // No capacity at all on the variant's side (not even the lowest rate within the SLO).
  CapacityPairs none_within{200, {300, 310, 290}, {0, 0, 0}};
  EXPECT_EQ(judge(a, a, none, s, s, GateSettings{}, &none_within)[1].verdict,
            compare::Verdict::Fail);
}

// An approximate change (bf16): "same math" by the scores' noise envelope, max and mean |delta|
// each within c x the envelope's, instead of the exact tolerance.
TEST(Serve, AnApproximateChangeIsJudgedByTheScoreEnvelope) {
  const auto a = windows({100, 120, 90, 110, 105}, 1000, 0.99);
  SpeedTurns even;
  even.baseline_s = even.variant_s = {0.30, 0.31, 0.29, 0.30};
  const std::vector<double> base{-1.0, -2.0, -3.0, -4.0};
  const std::vector<double> close{-1.004, -1.998, -3.006, -4.001};  // |d| 0.004 .. 0.001
  ScoreEnvelope e;
  e.raw = {0.003, 0.002, 0.004, 0.001};  // max 0.004, mean 0.0025
  e.noise = 0.0039, e.noise_source = "unit roundoff of bf16", e.runs = 3, e.factor = 3;
  auto c = judge(a, a, even, base, close, GateSettings{}, nullptr, &e);
  EXPECT_EQ(c[3].verdict, compare::Verdict::Pass)
      << c[3].detail;  // 0.006 <= 0.012, 0.0035 <= 0.0075
  EXPECT_NE(c[3].detail.find("approximate change"), std::string::npos) << c[3].detail;
  EXPECT_EQ(judge(a, a, even, base, close, GateSettings{})[3].verdict,
            compare::Verdict::Fail);                            // exact: 5e-4
  const std::vector<double> one_far{-1.0, -2.0, -3.0, -4.013};  // max 0.013 > 3 x 0.004
  EXPECT_EQ(judge(a, a, even, base, one_far, GateSettings{}, nullptr, &e)[3].verdict,
            compare::Verdict::Fail);
  const std::vector<double> biased{-1.008, -2.008, -3.008, -4.008};  // max 0.008 ok, mean 0.008 not
  EXPECT_EQ(judge(a, a, even, base, biased, GateSettings{}, nullptr, &e)[3].verdict,
            compare::Verdict::Fail);
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Serve, ABadServingConfigIsOneLineNamingFileLineAndKey) {
  const std::string overlap = error_of(
      "[[serve.lanes]]\nmax_len = 32\n[[serve.lanes]]\nmin_len = 20\nmax_len = 128\n");
  EXPECT_NE(overlap.find("serve.toml:6"), std::string::npos) << overlap;
  EXPECT_NE(overlap.find("serve.lanes[2].min_len"), std::string::npos) << overlap;
  EXPECT_NE(overlap.find("overlaps"), std::string::npos) << overlap;
  const std::string gap = error_of(
      "[[serve.lanes]]\nmax_len = 32\n[[serve.lanes]]\nmin_len = 40\nmax_len = 128\n");
  EXPECT_NE(gap.find("serve.lanes[2].min_len"), std::string::npos) << gap;
  EXPECT_NE(gap.find("33..39 have no lane"), std::string::npos) << gap;
  const std::string rate = error_of("[serve]\nrate_rps = 0\n[[serve.lanes]]\nmax_len = 32\n");
  EXPECT_NE(rate.find("serve.toml:4"), std::string::npos) << rate;
  EXPECT_NE(rate.find("serve.rate_rps: must be > 0"), std::string::npos) << rate;
  EXPECT_NE(error_of("[serve]\nrate_rps = -3.0\n").find("serve.rate_rps: out of range"), std::string::npos);
  const std::string too_long = error_of("[[serve.lanes]]\nmax_len = 4096\n");
  EXPECT_NE(too_long.find("model.seq_len = 128"), std::string::npos) << too_long;
  const std::string field = error_of("[[serve.lanes]]\nmax_len = 32\nmax_batch = 4\n");
  EXPECT_NE(field.find("serve.lanes[1].max_batch"), std::string::npos) << field;
  EXPECT_NE(field.find("did you mean \"max_batch_size\""), std::string::npos) << field;
  for (const std::string& e : {overlap, gap, rate, too_long, field})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;

  const fs::path dir = fs::temp_directory_path() / ("serve_trace_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "trace.txt") << "# arrival_ms length\n0 12\n5 20\n3 8\n";
  std::ofstream(dir / "s.toml") << "[model]\npreset = \"small\"\n[serve]\ntrace = \"trace.txt\"\n"
                                   "[[serve.lanes]]\nmax_len = 64\n";
  std::string trace;
  try {
    config::Config::load(dir / "s.toml");
  } catch (const config::ConfigError& e) {
    trace = e.what();
  }
  EXPECT_NE(trace.find("trace.txt:4"), std::string::npos) << trace;
  EXPECT_NE(trace.find("serve.trace"), std::string::npos) << trace;
  EXPECT_NE(trace.find("out of order"), std::string::npos) << trace;
  std::ofstream(dir / "trace.txt") << "0 12\n5 20\n5 8\n9 130\n";
  const auto ok = ServeConfig::from(config::Config::load(dir / "s.toml"));
  const auto s = make_schedule(ok, 0);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].arrival_s, 0.005);
  EXPECT_EQ(s[3].lane, -1);  // 130 tokens: no lane
  fs::remove_all(dir);
}

TEST(Serve, LanesRoundTripThroughConfigShow) {
  const auto c = parse(
      "[[serve.lanes]]\nname = \"fast\"\nmax_len = 32\npriority = 0\n"
      "[[serve.lanes]]\nname = \"bulk\"\nmax_len = 128\nmax_batch_size = 32\nmax_wait_ms = 50.0\n");
  const std::string toml = c.to_toml();
  EXPECT_NE(toml.find("lanes = [{ max_len = 32, name = \"fast\", priority = 0 }, { max_batch_size = "
                      "32, max_len = 128, max_wait_ms = 50.0, name = \"bulk\" }]"),
            std::string::npos)
      << toml;
  const auto again = config::Config::parse(toml, "again.toml");
  EXPECT_EQ(again.hash(), c.hash());
  const auto cfg = ServeConfig::from(again);
  ASSERT_EQ(cfg.lanes.size(), 2u);
  EXPECT_EQ(cfg.lanes[1].min_len, 33);
  EXPECT_EQ(cfg.lanes[1].max_wait_ms, 50.0);
  EXPECT_TRUE(serving_enabled(again));
  EXPECT_FALSE(serving_enabled(parse("")));
}

}  // namespace
}  // namespace lockstep::serve
