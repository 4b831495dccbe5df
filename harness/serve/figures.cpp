#include "harness/serve/figures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "harness/serve/load.h"

namespace lockstep::serve {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double nearest_rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(sorted.size())));
  return sorted[i - 1];
}

Figures one(const ServeConfig& cfg, const std::string& name, int lane,
            const std::vector<const Outcome*>& all, double duration_s) {
  Figures f;
  f.lane = name;
  f.duration_s = duration_s;
  f.slo_ms = cfg.slo_ms;
  std::vector<double> lat, queue, service;
  double tokens = 0, computed = 0, batch = 0;
  int64_t within = 0;
  for (const Outcome* o : all) {
    if (lane >= 0 && o->lane != lane) continue;
    ++f.offered;
    if (o->fate == Fate::Rejected) {
      ++f.rejected;
      continue;
    }
    if (o->fate == Fate::Unserved) {
      ++f.unserved;
      lat.push_back(kInf);
      continue;
    }
    ++f.served;
    const double ms = o->latency_s * 1e3;
    lat.push_back(ms);
    if (ms <= cfg.slo_ms) ++within;
    queue.push_back((o->started_s - o->scheduled_s) * 1e3);
    service.push_back((o->done_s - o->started_s) * 1e3);
    tokens += static_cast<double>(o->len);
    computed += static_cast<double>(o->padded_len);
    batch += static_cast<double>(o->batch_size);
  }
  f.p50 = latency_quantile(lat, 0.5), f.p90 = latency_quantile(lat, 0.9);
  f.p99 = latency_quantile(lat, 0.99), f.p999 = latency_quantile(lat, 0.999);
  std::sort(queue.begin(), queue.end());
  std::sort(service.begin(), service.end());
  f.queue_p50_ms = nearest_rank(queue, 0.5), f.queue_p99_ms = nearest_rank(queue, 0.99);
  f.service_p50_ms = nearest_rank(service, 0.5), f.service_p99_ms = nearest_rank(service, 0.99);
  if (duration_s > 0) {
    f.throughput_rps = static_cast<double>(f.served) / duration_s;
    f.tokens_per_s = tokens / duration_s;
    f.goodput_rps = static_cast<double>(within) / duration_s;
  }
  f.padding_share = computed > 0 ? 1.0 - tokens / computed : 0;
  f.mean_batch = f.served ? batch / static_cast<double>(f.served) : 0;
  f.slo_attainment = f.offered ? static_cast<double>(within) / static_cast<double>(f.offered) : 0;
  return f;
}

}  // namespace

std::vector<double> latencies_ms(const std::vector<std::vector<Outcome>>& windows) {
  std::vector<double> ms;
  for (const auto& w : windows)
    for (const auto& o : w) ms.push_back(o.fate == Fate::Served ? o.latency_s * 1e3 : kInf);
  std::sort(ms.begin(), ms.end());
  return ms;
}

std::vector<LoadPoint> p99_by_offered_load(const ServeConfig& cfg,
                                           const std::vector<std::vector<Outcome>>& windows) {
  std::map<double, std::vector<double>> by_rate;
  for (const auto& w : windows)
    for (const auto& o : w)
      by_rate[rate_at(cfg, o.scheduled_s)].push_back(o.fate == Fate::Served ? o.latency_s * 1e3
                                                                            : kInf);
  std::vector<LoadPoint> out;
  for (auto& [rate, ms] : by_rate)
    out.push_back({rate, static_cast<int64_t>(ms.size()), latency_quantile(std::move(ms), 0.99)});
  return out;
}

Quantile latency_quantile(std::vector<double> ms, double q) {
  Quantile out;
  out.q = q;
  if (ms.empty()) return out;
  std::sort(ms.begin(), ms.end());
  const double n = static_cast<double>(ms.size());
  out.ms = nearest_rank(ms, q);
  out.is_max = std::ceil(q * n) >= n && ms.size() > 1;
  // The k-th smallest sample is below the true q-quantile with probability Binomial(n, q):
  // normal approximation, 95%.
  const double half = 1.96 * std::sqrt(n * q * (1 - q));
  const auto at = [&](double rank) {
    return ms[static_cast<size_t>(std::clamp(rank, 1.0, n)) - 1];
  };
  out.lo_ms = at(std::floor(n * q - half));
  out.hi_ms = at(std::ceil(n * q + half) + 1);
  return out;
}

TailOrigin tail_origin(const ServeConfig& cfg, const std::vector<std::vector<Outcome>>& windows) {
  std::vector<const Outcome*> all;
  for (const auto& w : windows)
    for (const auto& o : w)
      if (o.fate != Fate::Rejected) all.push_back(&o);
  auto lateness = [](const Outcome* o) { return o->fate == Fate::Served ? o->latency_s : kInf; };
  std::sort(all.begin(), all.end(),
            [&](const Outcome* a, const Outcome* b) { return lateness(a) > lateness(b); });
  TailOrigin t;
  t.requests = static_cast<int64_t>(std::ceil(0.01 * static_cast<double>(all.size())));
  std::vector<int64_t> per_lane(cfg.lanes.size(), 0);
  double queue = 0, service = 0;
  for (int64_t i = 0; i < t.requests; ++i) {
    const Outcome* o = all[static_cast<size_t>(i)];
    if (o->lane >= 0) ++per_lane[static_cast<size_t>(o->lane)];
    if (o->fate != Fate::Served) {
      ++t.unserved;
      continue;
    }
    queue += o->started_s - o->scheduled_s;
    service += o->done_s - o->started_s;
  }
  if (queue + service > 0) t.queue_share = queue / (queue + service), t.service_share = 1 - t.queue_share;
  for (size_t l = 0; l < per_lane.size(); ++l)
    if (per_lane[l]) t.lanes.emplace_back(cfg.lanes[l].name, per_lane[l]);
  std::sort(t.lanes.begin(), t.lanes.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (t.requests == 0) {
    t.sentence = "no requests";
    return t;
  }
  char b[256];
  if (t.unserved == t.requests)
    std::snprintf(b, sizeof b, "the slowest 1%% (%lld requests) were never served",
                  static_cast<long long>(t.requests));
  else
    std::snprintf(b, sizeof b, "the slowest 1%% (%lld requests) is %s (%.0f%% of their latency)",
                  static_cast<long long>(t.requests),
                  t.queue_share >= 0.5 ? "queue wait" : "service time",
                  100 * std::max(t.queue_share, t.service_share));
  t.sentence = b;
  if (t.unserved && t.unserved < t.requests)
    t.sentence += ", " + std::to_string(t.unserved) + " of them never served";
  if (!t.lanes.empty() && cfg.lanes.size() > 1)
    t.sentence += "; mostly lane \"" + t.lanes.front().first + "\" (" +
                  std::to_string(t.lanes.front().second) + " of " + std::to_string(t.requests) + ")";
  return t;
}

std::vector<Figures> window_figures(const ServeConfig& cfg, const std::vector<Outcome>& outcomes,
                                    double duration_s) {
  return pooled_figures(cfg, {outcomes}, {duration_s});
}

std::vector<Figures> pooled_figures(const ServeConfig& cfg,
                                    const std::vector<std::vector<Outcome>>& windows,
                                    const std::vector<double>& durations_s) {
  std::vector<const Outcome*> all;
  for (const auto& w : windows)
    for (const auto& o : w) all.push_back(&o);
  double duration = 0;
  for (double d : durations_s) duration += d;
  std::vector<Figures> out{one(cfg, "all", -1, all, duration)};
  for (size_t i = 0; i < cfg.lanes.size(); ++i)
    out.push_back(one(cfg, cfg.lanes[i].name, static_cast<int>(i), all, duration));
  return out;
}

}  // namespace lockstep::serve
