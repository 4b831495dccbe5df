#include "harness/compare/memory_per_rank.h"

#include <cmath>

namespace lockstep::compare {
namespace {

std::optional<double> pct(double baseline, double variant) {
  if (!(baseline > 0) || !(variant > 0) || !std::isfinite(baseline) || !std::isfinite(variant))
    return std::nullopt;
  return 100.0 * (variant / baseline - 1.0);
}

}  // namespace

void fill_memory_per_rank(ArmResult& arm, const RunSummary& run, const config::Config& cfg) {
  arm.memory = run.memory;
  arm.comm_bytes_per_step = run.comm_bytes_per_step;
  arm.zero_stage = cfg.integer("parallel.zero_stage");
  arm.world_size = cfg.integer("parallel.world_size");
}

void memory_per_rank_deltas(CompareResult& r) {
  if (r.mode != Mode::AB) return;
  const auto& b = r.baseline;
  const auto& v = r.variant;
  auto d = [](int64_t x, int64_t y) { return pct(static_cast<double>(x), static_cast<double>(y)); };
  r.delta.param_bytes_per_rank_pct =
      d(b.memory.param_bytes_per_rank, v.memory.param_bytes_per_rank);
  r.delta.grad_bytes_per_rank_pct = d(b.memory.grad_bytes_per_rank, v.memory.grad_bytes_per_rank);
  r.delta.optimizer_state_bytes_per_rank_pct =
      d(b.memory.optimizer_state_bytes_per_rank, v.memory.optimizer_state_bytes_per_rank);
  r.delta.comm_bytes_per_step_pct = pct(b.comm_bytes_per_step, v.comm_bytes_per_step);
}

bool any_arm_sharded(const CompareResult& r) {
  return r.baseline.zero_stage > 0 || r.variant.zero_stage > 0;
}

}  // namespace lockstep::compare
