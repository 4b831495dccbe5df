// Writes a synthetic serving comparison's report.html into DIR for the headless-browser check
// (tests/browser/check-html.sh): two arms of 2000 requests each over two lanes, off-peak and peak,
// the variant with a slower peak tail and a few requests never served, judged by capacity (each
// arm's search probes), through the real figures and the real renderer.
//
//   serve_report_fixture DIR
#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "harness/serve/figures.h"
#include "harness/serve/load.h"
#include "harness/stats/statistics.h"
#include "reports/serve_html.h"

namespace {

using namespace lockstep;

serve::ServeConfig fixture_config() {
  serve::ServeConfig cfg;
  cfg.lanes = {{"short", 1, 32, 0, 4, 2.0, 2}, {"long", 33, 128, 5, 2, 5.0, 2}};
  cfg.rate_rps = 120;
  cfg.duration_s = 6;
  cfg.peak_multiplier = 3;
  cfg.peak_start_s = 2;
  cfg.peak_duration_s = 2;
  cfg.slo_ms = 200;
  return cfg;
}

std::vector<serve::Outcome> window(const serve::ServeConfig& cfg, double tail_scale,
                                   int unserved, uint64_t seed) {
  stats::SplitMix64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
  std::vector<serve::Outcome> out;
  for (int64_t i = 0; i < 2000; ++i) {
    serve::Outcome o;
    o.id = i;
    o.scheduled_s = cfg.duration_s * static_cast<double>(i) / 2000.0;
    o.len = uniform() < 0.1 ? 100 : 20;
    o.lane = cfg.lane_of(o.len);
    const bool peak = serve::rate_at(cfg, o.scheduled_s) > cfg.rate_rps;
    const double base = (o.len > 32 ? 0.04 : 0.01) * (1 + uniform());
    o.latency_s = base * (peak ? tail_scale * (1 + 4 * uniform() * uniform()) : 1.0);
    o.started_s = o.scheduled_s + 0.3 * o.latency_s;
    o.done_s = o.scheduled_s + o.latency_s;
    o.batch_size = 2;
    o.padded_len = o.len + 2;
    o.fate = i < unserved ? serve::Fate::Unserved : serve::Fate::Served;
    out.push_back(o);
  }
  return out;
}

// serve.throughput_check = "capacity": a search's probes, P99 rising past the SLO near
// `capacity` req/s (one probe never served: a null P99).
std::vector<serve::LoadPoint> probes(double capacity) {
  std::vector<serve::LoadPoint> out;
  for (double rate : {120.0, 240.0, 480.0, 339.4, 403.6, 370.1, 960.0}) {
    serve::LoadPoint p;
    p.rate_rps = rate;
    p.requests = static_cast<int64_t>(rate * 6);
    p.p99.q = 0.99;
    p.p99.ms = rate >= 900 ? INFINITY : 40 * std::exp(2.2 * rate / capacity);
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rate_rps < b.rate_rps; });
  return out;
}

reports::ServeHtmlArm arm(const serve::ServeConfig& cfg, const std::string& label,
                          double tail_scale, int unserved, double capacity) {
  const std::vector<std::vector<serve::Outcome>> all{window(cfg, tail_scale, unserved, 7)};
  return {label,
          "configs/serve/" + label + ".toml",
          serve::pooled_figures(cfg, all, {cfg.duration_s}),
          serve::tail_origin(cfg, all),
          serve::latencies_ms(all),
          serve::p99_by_offered_load(cfg, all),
          probes(capacity),
          capacity * 0.9};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: serve_report_fixture DIR\n";
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const auto cfg = fixture_config();
    serve::ServeCheck p99{"p99 latency", compare::Verdict::Fail, 180.0, {120.0, 260.0}, 0.001,
                          "P99 +180%"};
    serve::ServeCheck capacity{"capacity", compare::Verdict::Fail,
                               -18.0,      {-25.0, -11.0},
                               0.004,      "capacity at P99 <= 200 ms -18.00% over 3 search pairs"};
    reports::ServeHtmlInput in{{p99, capacity}, false, 5, cfg.slo_ms,
                               arm(cfg, "baseline", 1.5, 0, 380), arm(cfg, "variant", 6.0, 3, 310)};
    std::ofstream(dir / "report.html") << reports::serve_compare_html(in);
    std::cout << (dir / "report.html").string() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "serve_report_fixture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
