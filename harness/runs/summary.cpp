#include "harness/runs/summary.h"

#include <cmath>
#include <utility>

#include "harness/stats/statistics.h"

namespace lockstep {

std::string classify_bound(const std::map<std::string, double>& share) {
  auto get = [&](const char* k) {
    auto it = share.find(k);
    return it == share.end() ? 0.0 : it->second;
  };
  const double data = get("data"), comm = get("comm");
  const double compute = get("forward") + get("backward") + get("optimizer");
  if (data >= comm && data >= compute) return "input-bound";
  if (comm >= data && comm >= compute) return "comm-bound";
  return "compute-bound";
}

RunSummary summarize(const std::vector<StepRecord>& records, const SummaryInputs& in,
                     RunSummary s) {
  s.name = in.name;
  s.config_hash = in.config_hash;
  s.flops_per_token = in.flops_per_token;
  s.mfu_formula = kMfuFormula;
  s.peak_flops = in.peak_flops;
  s.peak_flops_source = in.peak_flops_source;
  s.steps = records.empty() ? 0 : records.back().step;
  s.final_loss = records.empty() ? NAN : records.back().loss;

  std::vector<double> ms;
  double tokens = 0, total_ms = 0, comm_bytes = 0;
  std::map<std::string, double> phase_total;
  for (const auto& r : records) {
    if (!r.timed || !std::isfinite(r.loss)) continue;
    ms.push_back(r.step_ms);
    tokens += static_cast<double>(r.tokens);
    total_ms += r.step_ms;
    comm_bytes += static_cast<double>(r.comm_bytes);
    for (const auto& [k, v] : r.phase_ms) phase_total[k] += v;
  }
  s.timed_steps = static_cast<int64_t>(ms.size());
  s.tokens_per_sec = total_ms > 0 ? tokens / (total_ms / 1000.0) : NAN;
  s.step_ms = Percentiles{stats::percentile(ms, 50), stats::percentile(ms, 95),
                          stats::percentile(ms, 99), stats::mean(ms)};
  s.comm_bytes_per_step = ms.empty() ? 0 : comm_bytes / static_cast<double>(ms.size());
  for (const auto& p : phase_names()) {
    s.phase_share[p] = total_ms > 0 ? phase_total[p] / total_ms : 0;
    s.phase_ms_mean[p] = ms.empty() ? 0 : phase_total[p] / static_cast<double>(ms.size());
  }
  s.bound = ms.empty() ? "unknown" : classify_bound(s.phase_share);
  if (s.peak_flops && *s.peak_flops > 0 && std::isfinite(s.tokens_per_sec))
    s.mfu = in.flops_per_token * s.tokens_per_sec / *s.peak_flops;
  else
    s.mfu.reset();
  return s;
}

RunSummary summarize_outcome(const train::TrainOutcome& o, const std::vector<StepRecord>& records,
                             const SummaryInputs& in, std::vector<PluginRef> plugins) {
  RunSummary base;
  base.status = o.status;
  base.failure = o.failure;
  base.failed_step = o.failed_step;
  base.memory = o.memory;
  base.peak_memory_bytes = o.peak_memory_bytes;
  base.peak_rss_bytes = o.peak_rss_bytes;
  base.overflow_skips = o.overflow_skips;
  base.loss_floor = o.loss_floor;
  base.env = o.env;
  base.top_ops = o.top_ops;
  base.top_kernels = o.top_kernels;
  base.memory_per_rank = o.memory_per_rank;
  base.profiled_steps = o.profiled_steps;
  base.plugins = std::move(plugins);
  return summarize(records, in, std::move(base));
}

}  // namespace lockstep
