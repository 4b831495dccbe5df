// The clients (issue 37). open_loop is the load Lockstep measures with: each request is handed
// over at its scheduled time whatever the server is doing, and its latency counts from that time,
// so a stall is charged in full to every request due during it (no coordinated omission; wrk2,
// HdrHistogram). closed_loop is the common mistake, kept to show it (tests, docs/serving.md): one
// client that sends the next request only when the previous one returned, its latency counted
// from the send; a stall then delays the requests instead of showing in their latency.
#pragma once

#include <vector>

#include "harness/serve/server.h"

namespace lockstep::serve {

struct Window {
  std::vector<Outcome> outcomes;  // by request id
  double duration_s = 0;          // the load's span: its last arrival (at least cfg.duration_s)
  double wall_s = 0;              // until the last request finished or was given up
  double max_send_lag_ms = 0;     // how late the client handed a request over at worst
};

Window open_loop(const ServeConfig& cfg, const std::vector<Request>& schedule, Service& service);
Window closed_loop(const ServeConfig& cfg, const std::vector<Request>& schedule, Service& service);

}  // namespace lockstep::serve
