#include "harness/serve/serve_json.h"

#include <cmath>

namespace lockstep::serve {

using nlohmann::ordered_json;

ordered_json finite_or_null(double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(); }

namespace {
ordered_json quantile(const Quantile& q) {
  return ordered_json{{"ms", finite_or_null(q.ms)},
                      {"ci", {finite_or_null(q.lo_ms), finite_or_null(q.hi_ms)}},
                      {"is_max", q.is_max}};
}
}  // namespace

ordered_json to_json(const Figures& f) {
  return ordered_json{
      {"lane", f.lane},
      {"offered", f.offered},
      {"served", f.served},
      {"unserved", f.unserved},
      {"rejected", f.rejected},
      {"duration_s", f.duration_s},
      {"throughput_rps", f.throughput_rps},
      {"tokens_per_sec", f.tokens_per_s},
      {"padding_share", f.padding_share},
      {"latency_ms",
       {{"p50", quantile(f.p50)}, {"p90", quantile(f.p90)}, {"p99", quantile(f.p99)},
        {"p99.9", quantile(f.p999)}}},
      {"queue_wait_ms", {{"p50", f.queue_p50_ms}, {"p99", f.queue_p99_ms}}},
      {"service_ms", {{"p50", f.service_p50_ms}, {"p99", f.service_p99_ms}}},
      {"mean_batch", f.mean_batch},
      {"slo_ms", f.slo_ms},
      {"slo_attainment", f.slo_attainment},
      {"goodput_rps", f.goodput_rps},
  };
}

ordered_json to_json(const TailOrigin& t) {
  ordered_json lanes = ordered_json::object();
  for (const auto& [name, n] : t.lanes) lanes[name] = n;
  return ordered_json{{"requests", t.requests},
                      {"queue_share", t.queue_share},
                      {"service_share", t.service_share},
                      {"unserved", t.unserved},
                      {"lanes", lanes},
                      {"summary", t.sentence}};
}

ordered_json to_json(const ServeCheck& c) {
  return ordered_json{{"name", c.name},
                      {"verdict", compare::to_string(c.verdict)},
                      {"value", finite_or_null(c.value_pct)},
                      {"ci", {finite_or_null(c.ci.lo), finite_or_null(c.ci.hi)}},
                      {"ci_level", c.ci_level > 0 ? ordered_json(c.ci_level) : ordered_json()},
                      {"p", finite_or_null(c.p)},
                      {"detail", c.detail}};
}

ordered_json load_json(const ServeConfig& cfg) {
  ordered_json lanes = ordered_json::array();
  for (const auto& l : cfg.lanes)
    lanes.push_back({{"name", l.name},
                     {"min_len", l.min_len},
                     {"max_len", l.max_len},
                     {"priority", l.priority},
                     {"max_batch_size", l.max_batch_size},
                     {"max_wait_ms", l.max_wait_ms},
                     {"workers", l.workers}});
  return ordered_json{{"arrivals", cfg.replays_trace() ? "trace" : "poisson"},
                      {"trace", cfg.trace},
                      {"rate_rps", cfg.rate_rps},
                      {"duration_s", cfg.duration_s},
                      {"peak_multiplier", cfg.peak_multiplier},
                      {"peak_start_s", cfg.peak_start_s},
                      {"peak_duration_s", cfg.peak_duration_s},
                      {"long_share", cfg.long_share},
                      {"slo_ms", cfg.slo_ms},
                      {"seed", cfg.seed},
                      {"lanes", lanes}};
}

}  // namespace lockstep::serve
