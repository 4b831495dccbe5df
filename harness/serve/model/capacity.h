// `lockstep serve-capacity` (issue 37): the highest Poisson rate whose P99 stays within the SLO
// (MLPerf's server scenario). The search doubles the rate from serve.rate_rps until P99 breaks
// the SLO, then bisects the bracket to 5%; each probe is one window of serve.duration_s (no
// peak). It runs `searches` times with different arrival seeds: the capacity is their median and
// its uncertainty their range, with each search's bracket.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/serve/server.h"
#include "harness/vocab/serve_config.h"

namespace lockstep::serve {

struct CapacityProbe {
  double rate_rps = 0, p99_ms = 0;
  bool within = false;
  int64_t requests = 0;
};

struct CapacitySearch {
  double capacity_rps = 0;  // the highest rate seen within the SLO (0: not even the lowest)
  double above_rps = 0;     // the lowest rate seen beyond it
  std::vector<CapacityProbe> probes;
};

struct Capacity {
  double slo_ms = 0;
  double median_rps = 0, min_rps = 0, max_rps = 0;
  std::vector<CapacitySearch> searches;
};

Capacity find_capacity(const config::Config& cfg, double slo_ms, int searches, std::ostream& log);

// The load a capacity search probes: Poisson at a steady rate (no peak, no trace), judged at
// slo_ms.
ServeConfig capacity_load(const ServeConfig& cfg, double slo_ms);
// Search `s` (0-based; its arrivals come from seed + 7919 (s + 1), the same for every arm) on a
// warm service: the rate doubles from load.rate_rps until P99 breaks the SLO, then the bracket is
// bisected to 5%. Progress lines name `who`.
CapacitySearch search_capacity(const ServeConfig& load, Service& service, int s,
                               const std::string& who, std::ostream& log);
// The median, min and max of the searches' capacities.
void summarize(Capacity& c);

}  // namespace lockstep::serve
