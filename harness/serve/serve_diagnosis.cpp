#include "harness/serve/serve_diagnosis.h"

#include <cmath>
#include <stdexcept>

namespace lockstep::serve {
namespace {

using nlohmann::json;

double num(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return INFINITY;  // an unserved tail: null
  return j.at(key).get<double>();
}

const json& need(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw std::runtime_error(where + ": no \"" + key + "\" (not a serving report?)");
  return j.at(key);
}

ServeFinding diagnose_arm(const json& arm, const std::string& where) {
  ServeFinding f;
  f.arm = arm.value("label", "serve");
  f.config = arm.value("config", "");
  const json& figures = need(arm, "figures", where);
  if (!figures.is_array() || figures.empty()) throw std::runtime_error(where + ": empty \"figures\"");
  const json& all = figures.at(0);
  f.p99_ms = num(need(need(all, "latency_ms", where), "p99", where), "ms");
  f.slo_ms = all.value("slo_ms", 0.0);
  f.slo_attainment = all.value("slo_attainment", 0.0);
  f.padding_share = all.value("padding_share", 0.0);
  const json& tail = need(arm, "tail", where);
  f.tail_requests = tail.value("requests", int64_t{0});
  f.unserved = tail.value("unserved", int64_t{0});
  f.queue_share = tail.value("queue_share", 0.0);
  // The lane most of the tail came from (the tail's lane map; one lane: that lane).
  int64_t most = -1;
  if (tail.contains("lanes"))
    for (const auto& [name, n] : tail.at("lanes").items())
      if (n.get<int64_t>() > most) most = n.get<int64_t>(), f.lane = name;
  if (f.lane.empty() && figures.size() > 1) f.lane = figures.at(1).value("lane", "");
  for (const auto& lf : figures)
    if (lf.value("lane", "") == f.lane) {
      f.lane_queue_p99_ms = lf.contains("queue_wait_ms") ? num(lf.at("queue_wait_ms"), "p99") : 0;
      f.lane_service_p99_ms = lf.contains("service_ms") ? num(lf.at("service_ms"), "p99") : 0;
    }
  if (arm.contains("load") && arm.at("load").contains("lanes"))
    for (const auto& l : arm.at("load").at("lanes"))
      if (l.value("name", "") == f.lane) f.lane_max_wait_ms = l.value("max_wait_ms", 0.0);

  const std::string lane = f.lane.empty() ? "" : " in lane \"" + f.lane + "\"";
  if (f.unserved > 0) {
    f.cause = "unserved";
    f.advice = std::to_string(f.unserved) + " requests were never served" + lane +
               ": the backlog outlived serve.drain_s, far beyond capacity; find it with "
               "`lockstep serve-capacity` before tuning anything else";
  } else if (f.p99_ms <= f.slo_ms) {
    f.cause = "none";
    f.advice = "P99 is within the SLO";
  } else if (f.queue_share >= 0.5 && f.lane_queue_p99_ms <= 2 * f.lane_max_wait_ms) {
    f.cause = "threshold";
    f.advice = "the tail waits for its batch to fill" + lane +
               " (queue P99 within twice max_wait_ms): lower max_wait_ms, or give these requests "
               "a lane of their own";
  } else if (f.queue_share >= 0.5) {
    f.cause = "capacity";
    f.advice = "the tail is queue wait" + lane +
               ": at the peak, arrivals outran what the lane serves; put short requests in a lane "
               "of their own (high priority) and long ones in a big-batch lane, or add workers; "
               "`lockstep serve-capacity` measures the headroom";
  } else {
    f.cause = "service";
    f.advice = "the tail is service time" + lane +
               ": batches too big or too padded (padding " +
               std::to_string(static_cast<int>(std::lround(100 * f.padding_share))) +
               "%); a smaller max_batch_size, narrower length buckets, or a lane for long requests";
  }
  return f;
}

}  // namespace

std::vector<ServeFinding> diagnose_serving(const json& report) {
  if (report.is_object() && report.value("kind", "") == "serve")
    return {diagnose_arm(need(report, "baseline", "report.json"), "report.json baseline"),
            diagnose_arm(need(report, "variant", "report.json"), "report.json variant")};
  return {diagnose_arm(report, "serve --json file")};
}

nlohmann::ordered_json to_json(const std::vector<ServeFinding>& findings) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& f : findings)
    out.push_back({{"arm", f.arm},
                   {"config", f.config},
                   {"p99_ms", std::isfinite(f.p99_ms) ? nlohmann::ordered_json(f.p99_ms) : nullptr},
                   {"slo_ms", f.slo_ms},
                   {"slo_attainment", f.slo_attainment},
                   {"tail_requests", f.tail_requests},
                   {"unserved", f.unserved},
                   {"queue_share", f.queue_share},
                   {"lane", f.lane},
                   {"lane_queue_p99_ms", f.lane_queue_p99_ms},
                   {"lane_service_p99_ms", f.lane_service_p99_ms},
                   {"lane_max_wait_ms", f.lane_max_wait_ms},
                   {"padding_share", f.padding_share},
                   {"cause", f.cause},
                   {"advice", f.advice}});
  return out;
}

}  // namespace lockstep::serve
