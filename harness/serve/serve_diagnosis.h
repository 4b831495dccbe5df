// `lockstep diagnose` on a serving run (issue 37): where each arm's tail came from, read back
// from what the run wrote (a comparison's report.json, or `serve --json`), and the playbook's
// remedy for that cause. Per arm:
//   unserved   requests never served: the backlog outlived serve.drain_s (far over capacity)
//   threshold  the tail is queue wait, but no longer than the lane's max_wait_ms allows: the
//              batching threshold itself (lower max_wait_ms, or a lane of its own)
//   capacity   the tail is queue wait beyond the threshold: arrivals outran the lane at the peak
//              (separate lanes for short requests, more workers; `serve-capacity` says how far)
//   service    the tail is service time: big or padded batches (smaller max_batch_size, length
//              buckets, a lane for long requests)
//   none       P99 within the SLO: nothing to name
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lockstep::serve {

struct ServeFinding {
  std::string arm;     // "baseline", "variant", "serve"
  std::string config;
  double p99_ms = 0;   // inf when the tail was never served
  double slo_ms = 0, slo_attainment = 0, padding_share = 0;
  int64_t tail_requests = 0, unserved = 0;
  double queue_share = 0;  // of the served tail's latency
  std::string lane;        // the lane most of the tail came from
  double lane_queue_p99_ms = 0, lane_service_p99_ms = 0, lane_max_wait_ms = 0;
  std::string cause;   // unserved, threshold, capacity, service, none
  std::string advice;  // one sentence
};

// `report` is a comparison's report.json (kind "serve") or one `serve --json` arm. A file that is
// neither throws std::runtime_error naming what is missing.
std::vector<ServeFinding> diagnose_serving(const nlohmann::json& report);

nlohmann::ordered_json to_json(const std::vector<ServeFinding>& findings);

}  // namespace lockstep::serve
