#include "harness/serve/model/capacity.h"

#include <algorithm>
#include <cmath>

#include "harness/serve/drive.h"
#include "harness/serve/figures.h"
#include "harness/serve/load.h"
#include "harness/serve/model/model_service.h"

namespace lockstep::serve {

ServeConfig capacity_load(const ServeConfig& cfg, double slo_ms) {
  ServeConfig base = cfg;
  base.trace.clear();
  base.peak_multiplier = 1, base.peak_duration_s = 0;
  base.slo_ms = slo_ms;
  return base;
}

CapacitySearch search_capacity(const ServeConfig& base, Service& service, int s,
                               const std::string& who, std::ostream& log) {
  CapacitySearch search;
  auto probe = [&](double rate) {
    ServeConfig c = base;
    c.rate_rps = rate;
    const auto w =
        open_loop(c, make_schedule(c, base.seed + 7919 * static_cast<uint64_t>(s + 1)), service);
    const auto f = window_figures(c, w.outcomes, w.duration_s).front();
    CapacityProbe p{rate, f.p99.ms, f.p99.ms <= base.slo_ms, f.offered};
    char line[200];
    std::snprintf(line, sizeof line, "%s: search %d: %.1f req/s -> P99 %.1f ms (%s)\n",
                  who.c_str(), s + 1, rate, p.p99_ms, p.within ? "within" : "beyond");
    log << line << std::flush;
    search.probes.push_back(p);
    if (p.within) search.capacity_rps = std::max(search.capacity_rps, rate);
    else search.above_rps = search.above_rps > 0 ? std::min(search.above_rps, rate) : rate;
    return p.within;
  };
  double lo = 0, hi = 0, rate = base.rate_rps;
  for (int i = 0; i < 16; ++i, rate *= 2) {  // bracket
    if (probe(rate)) lo = rate;
    else {
      hi = rate;
      break;
    }
  }
  if (hi == 0) hi = rate;  // never broke within 2^16 x: reported as the bracket's top
  if (lo == 0) {           // beyond already at the start rate: search down
    for (rate = base.rate_rps / 2; rate > base.rate_rps / 1024; rate /= 2)
      if (probe(rate)) {
        lo = rate;
        break;
      } else hi = rate;
  }
  while (lo > 0 && hi / lo > 1.05) {
    const double mid = std::sqrt(lo * hi);
    if (probe(mid)) lo = mid;
    else hi = mid;
  }
  return search;
}

void summarize(Capacity& out) {
  std::vector<double> caps;
  for (const auto& s : out.searches) caps.push_back(s.capacity_rps);
  if (caps.empty()) return;
  std::sort(caps.begin(), caps.end());
  out.min_rps = caps.front(), out.max_rps = caps.back();
  out.median_rps = caps.size() % 2 ? caps[caps.size() / 2]
                                   : 0.5 * (caps[caps.size() / 2 - 1] + caps[caps.size() / 2]);
}

Capacity find_capacity(const config::Config& config, double slo_ms, int searches,
                       std::ostream& log) {
  const ServeConfig base = capacity_load(ServeConfig::from(config), slo_ms);
  ModelService service(config);
  {  // warm-up, discarded
    ServeConfig w = base;
    w.duration_s = std::min(1.0, base.duration_s);
    open_loop(w, make_schedule(w, base.seed ^ 0x3a3a3aULL), service);
  }
  Capacity out;
  out.slo_ms = slo_ms;
  for (int s = 0; s < searches; ++s)
    out.searches.push_back(search_capacity(base, service, s, "serve-capacity", log));
  summarize(out);
  return out;
}

}  // namespace lockstep::serve
