// The figures of one serving window or arm (issue 37), for all requests and per lane: throughput,
// padding, latency percentiles with confidence intervals, queue wait vs service time, batch size,
// SLO attainment and goodput. Small free functions over the outcomes (harness/serve/server.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/serve/server.h"

namespace lockstep::serve {

// A latency percentile by nearest rank, with a 95% interval from the order statistics (the
// binomial count of samples below the true quantile). An unserved request counts as infinitely
// late: with more than 1% unserved, P99 is inf, never a figure that hides them.
struct Quantile {
  double q = 0;
  double ms = 0, lo_ms = 0, hi_ms = 0;  // inf when the rank falls on an unserved request
  bool is_max = false;  // the nearest rank is the largest sample: too few requests for this q
};

struct Figures {
  std::string lane;  // "all", or the lane's name
  int64_t offered = 0, served = 0, unserved = 0, rejected = 0;
  double duration_s = 0;
  double throughput_rps = 0;  // served requests per second of load
  double tokens_per_s = 0;    // their real tokens per second
  double padding_share = 0;   // padded tokens / tokens computed
  Quantile p50, p90, p99, p999;
  double queue_p50_ms = 0, queue_p99_ms = 0;      // due -> its batch started
  double service_p50_ms = 0, service_p99_ms = 0;  // its batch's run
  double mean_batch = 0;
  double slo_ms = 0;
  double slo_attainment = 0;  // within slo_ms, of every offered request (rejected ones miss it)
  double goodput_rps = 0;     // requests within slo_ms per second
};

// Where the tail came from (`diagnose`, the reports): the slowest 1% of requests (unserved ones
// first), how much of their latency was queue wait vs service time, and which lanes they were in.
struct TailOrigin {
  int64_t requests = 0;  // in the tail
  double queue_share = 0, service_share = 0;  // of the served tail's summed latency
  int64_t unserved = 0;
  std::vector<std::pair<std::string, int64_t>> lanes;  // lane name, tail requests (most first)
  std::string sentence;  // "the tail is queue wait (83%), mostly lane \"long\" (41 of 50)"
};
TailOrigin tail_origin(const ServeConfig& cfg, const std::vector<std::vector<Outcome>>& windows);

Quantile latency_quantile(std::vector<double> latencies_ms, double q);

// Every offered request's latency in ms, ascending, over all windows: unserved and rejected
// requests as +inf (infinitely late: the latency CDF of the reports never reaches 1 with them).
std::vector<double> latencies_ms(const std::vector<std::vector<Outcome>>& windows);

// P99 latency by the offered rate at each request's scheduled arrival (rate_at: off-peak, peak;
// a trace has one rate), pooled over windows: the points of the reports' P99-vs-offered-load
// curve, ascending by rate.
struct LoadPoint {
  double rate_rps = 0;
  int64_t requests = 0;
  Quantile p99;
};
std::vector<LoadPoint> p99_by_offered_load(const ServeConfig& cfg,
                                           const std::vector<std::vector<Outcome>>& windows);
// "all" first, then one per lane in the config's order.
std::vector<Figures> window_figures(const ServeConfig& cfg, const std::vector<Outcome>& outcomes,
                                    double duration_s);
// The same over several windows pooled (a comparison's arm).
std::vector<Figures> pooled_figures(const ServeConfig& cfg,
                                    const std::vector<std::vector<Outcome>>& windows,
                                    const std::vector<double>& durations_s);

}  // namespace lockstep::serve
