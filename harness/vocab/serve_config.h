// [serve] and [[serve.lanes]]: the serving workload (issue 37). A config serves when it declares
// at least one lane. Owned by the service (harness/serve): the load (open-loop arrivals, request
// lengths), the lanes (length ranges, priority, their own dynamic batcher and workers) and the
// SLO. Torch-free: the load generator and the batcher read it without the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/config/config.h"

namespace lockstep::serve {

// One lane: requests of length min_len..max_len, batched by its own batcher, run by its own
// workers. Lanes tile 1..max of the last lane's max_len with no overlap and no gap.
struct LaneConfig {
  std::string name;
  int64_t min_len = 1, max_len = 0;  // tokens, inclusive
  int64_t priority = 0;              // 0 highest: the workers' nice value (0..19)
  int64_t max_batch_size = 8;        // a batch leaves when it has this many requests...
  double max_wait_ms = 5;            // ...or when its oldest request has waited this long
  int64_t workers = 1;               // threads running this lane's batches
};

struct ServeConfig {
  std::vector<LaneConfig> lanes;  // sorted by min_len
  double rate_rps = 50;           // Poisson arrivals, requests per second
  double duration_s = 10;         // the load's length (one window)
  double peak_multiplier = 1;     // the rate during the peak window
  double peak_start_s = 0, peak_duration_s = 0;
  std::string trace;  // a replayed trace ("arrival_ms length" per line) instead of Poisson
  int64_t short_min_len = 8, short_max_len = 32;
  int64_t long_min_len = 64, long_max_len = 128;
  double long_share = 0.1;  // the share of requests drawn from the long range
  double slo_ms = 200;      // the latency objective
  int64_t bucket_tokens = 16;  // a batch holds requests of one length bucket (this wide)
  double drain_s = 5;          // after the last arrival: how long queued requests may still finish
  int64_t score_requests = 64;  // the fixed request set whose scores the gate compares
  int64_t speed_pairs = 10;     // the gate's service-speed turns: AB/BA pairs over that set
  std::string throughput_check = "service_speed";  // or "capacity": compare judges capacity at the SLO
  int64_t capacity_searches = 3;  // with "capacity": search pairs, each arm once per arrival seed
  uint64_t seed = 0;            // the load's seed (run.seed)

  bool serving() const { return !lanes.empty(); }
  bool has_peak() const { return peak_multiplier != 1 && peak_duration_s > 0; }
  bool replays_trace() const { return !trace.empty(); }
  // compare judges throughput as the capacity at the SLO (paired capacity searches), not as the
  // service speed on the fixed request set.
  bool judges_capacity() const { return throughput_check == "capacity"; }
  int64_t longest_servable() const { return lanes.empty() ? 0 : lanes.back().max_len; }
  // The lane a request of `len` tokens goes to; -1: too long for every lane (rejected, counted).
  int lane_of(int64_t len) const;

  static ServeConfig from(const config::Config& cfg);
};

// One line of a replayed trace file: "arrival_ms length" (blank lines and # comments skipped).
struct TraceEntry {
  double arrival_s = 0;
  int64_t len = 0;
};
// Reads and checks a trace: times must be ascending (equal allowed), lengths >= 1. A bad line is a
// config::ConfigError naming the trace file, its line and `key` (exit 2).
std::vector<TraceEntry> read_trace(const std::string& path, const std::string& key);

// A named predicate: does this config describe a service rather than a training run?
bool serving_enabled(const config::Config& cfg);

const config::SectionSchema& serve_schema();

}  // namespace lockstep::serve
