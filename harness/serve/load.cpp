#include "harness/serve/load.h"

#include <algorithm>
#include <cmath>

#include "harness/util/splitmix.h"

namespace lockstep::serve {
namespace {

// A uniform in (0, 1) from one hash of (seed, stream, index): any draw is reproducible alone.
double uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t h = util::splitmix64(util::splitmix64(seed ^ (stream * 0x9e3779b97f4a7c15ULL)) + i);
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
}

constexpr uint64_t kGaps = 1, kLengthKind = 2, kLength = 3, kTokens = 4;

int64_t draw_len(const ServeConfig& cfg, uint64_t seed, uint64_t i) {
  const bool long_one = uniform(seed, kLengthKind, i) < cfg.long_share;
  const int64_t lo = long_one ? cfg.long_min_len : cfg.short_min_len;
  const int64_t hi = long_one ? cfg.long_max_len : cfg.short_max_len;
  return lo + static_cast<int64_t>(uniform(seed, kLength, i) * static_cast<double>(hi - lo + 1));
}

}  // namespace

double rate_at(const ServeConfig& cfg, double t) {
  const bool peak = cfg.has_peak() && t >= cfg.peak_start_s &&
                    t < cfg.peak_start_s + cfg.peak_duration_s;
  return cfg.rate_rps * (peak ? cfg.peak_multiplier : 1.0);
}

std::vector<Request> make_schedule(const ServeConfig& cfg, uint64_t seed) {
  std::vector<Request> out;
  if (cfg.replays_trace()) {
    const auto trace = read_trace(cfg.trace, "serve.trace");
    for (size_t i = 0; i < trace.size(); ++i) {
      Request r{static_cast<int64_t>(i), trace[i].arrival_s, trace[i].len, -1};
      r.lane = cfg.lane_of(r.len);
      out.push_back(r);
    }
    return out;
  }
  // A Poisson process with a piecewise-constant rate, by time rescaling: each gap is a unit
  // exponential of "arrival mass", spent at the rate of the segment the clock is in.
  double t = 0;
  for (uint64_t i = 0;; ++i) {
    double mass = -std::log(uniform(seed, kGaps, i));
    while (true) {
      const double rate = rate_at(cfg, t);
      // The next rate change after t (the peak's edges), or the end of the load.
      double edge = cfg.duration_s;
      if (cfg.has_peak()) {
        if (t < cfg.peak_start_s) edge = cfg.peak_start_s;
        else if (t < cfg.peak_start_s + cfg.peak_duration_s)
          edge = cfg.peak_start_s + cfg.peak_duration_s;
      }
      if (t + mass / rate < edge) {
        t += mass / rate;
        break;
      }
      if (edge >= cfg.duration_s) return out;
      mass -= (edge - t) * rate;
      t = edge;
    }
    Request r{static_cast<int64_t>(i), t, draw_len(cfg, seed, i), -1};
    r.lane = cfg.lane_of(r.len);
    out.push_back(r);
  }
}

std::vector<Request> fixed_request_set(const ServeConfig& cfg, int64_t n) {
  ServeConfig c = cfg;
  c.trace.clear();
  c.peak_multiplier = 1, c.peak_duration_s = 0;
  c.rate_rps = 1000;  // Poisson count of mean 3n + 1000: always more than n
  c.duration_s = 1.0 + 3.0 * static_cast<double>(n) / c.rate_rps;
  std::vector<Request> set = make_schedule(c, cfg.seed ^ 0x5c0e5e7ULL);
  if (set.size() > static_cast<size_t>(n)) set.resize(static_cast<size_t>(n));
  for (Request& r : set) {
    r.len = std::min(r.len, cfg.longest_servable());
    r.id = 1'000'000'000 + r.id;  // tokens of their own
    r.lane = cfg.lane_of(r.len);
  }
  return set;
}

void fill_tokens(uint64_t seed, int64_t id, int64_t len, int64_t vocab, int64_t* out) {
  for (int64_t k = 0; k < len; ++k)
    out[k] = static_cast<int64_t>(uniform(seed ^ static_cast<uint64_t>(id) * 0xd1342543de82ef95ULL,
                                          kTokens, static_cast<uint64_t>(k)) *
                                  static_cast<double>(vocab));
}

}  // namespace lockstep::serve
