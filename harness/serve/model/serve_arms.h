// Serving runs (issue 37): one service under its load (`lockstep serve`), or two taking turns in
// windows (`lockstep compare` on two serving configs): window k runs the same arrivals (seed +
// k) on both, in the order AB, BA, AB, ... so drift hits both alike; each arm first serves one
// discarded warm-up window. Both services live in this process, built once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/serve/drive.h"
#include "harness/serve/figures.h"
#include "harness/serve/model/capacity.h"
#include "harness/serve/verdict.h"

namespace lockstep::serve {

struct ArmWindow {
  Window window;
  std::vector<Figures> figures;  // "all", then per lane
  WindowStats stats;
};

struct ArmResult {
  std::string label, config_path, config_hash;
  ServeConfig cfg;
  std::string device, precision;
  std::vector<ArmWindow> windows;
  std::vector<Figures> pooled;  // every window's requests together
  std::vector<double> scores;   // the fixed request set's
};

// Progress lines go to `log` (stderr in the CLI), never to stdout.
ArmResult serve_one(const config::Config& cfg, const std::string& label, int windows,
                    std::ostream& log);

struct ServeComparison {
  ArmResult baseline, variant;
  std::vector<ServeCheck> checks;
  SpeedTurns speed;  // the throughput check's turns (serve.throughput_check = "service_speed")
  // serve.throughput_check = "capacity": each arm's capacity searches, search k of both arms on
  // the same arrivals, in turns (AB, BA, ...); judged as pairs in place of the service speed.
  bool judged_capacity = false;
  Capacity baseline_capacity, variant_capacity;
  // An approximate change (GateSettings::approximate): the fixed set's score envelope.
  std::optional<ScoreEnvelope> envelope;
  std::vector<std::string> order;  // "A" / "B" per window run, in time order
  double wall_s = 0;
};

ServeComparison serve_compare(const config::Config& baseline, const config::Config& variant,
                              int windows, const GateSettings& gate, std::ostream& log);

}  // namespace lockstep::serve
