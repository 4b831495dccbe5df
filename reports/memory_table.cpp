#include "reports/memory_table.h"

#include <cmath>

#include "reports/run_console.h"
#include "reports/text.h"

namespace lockstep::reports {
namespace {

std::string bytes(double b) {
  return std::isfinite(b) ? human_bytes(b) : "n/a";
}
std::string change(const std::optional<double>& pct) {
  return pct ? text::signed_fixed(*pct, 1, "%") : "n/a";
}

}  // namespace

std::string memory_table_caption(const compare::CompareResult& r) {
  const auto& b = r.baseline;
  const auto& v = r.variant;
  auto ranks = [](int64_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); };
  return "baseline ZeRO stage " + std::to_string(b.zero_stage) + " on " + ranks(b.world_size) +
         ", variant ZeRO stage " + std::to_string(v.zero_stage) + " on " + ranks(v.world_size);
}

std::vector<std::vector<std::string>> memory_table_rows(const compare::CompareResult& r) {
  const auto& b = r.baseline;
  const auto& v = r.variant;
  const auto& d = r.delta;
  auto row = [](std::string what, double x, double y, const std::optional<double>& pct) {
    return std::vector<std::string>{std::move(what), bytes(x), bytes(y), change(pct)};
  };
  auto f = [](int64_t x) { return static_cast<double>(x); };
  return {{"", "baseline", "variant", "delta"},
          row("parameters", f(b.memory.param_bytes_per_rank), f(v.memory.param_bytes_per_rank),
              d.param_bytes_per_rank_pct),
          row("gradients", f(b.memory.grad_bytes_per_rank), f(v.memory.grad_bytes_per_rank),
              d.grad_bytes_per_rank_pct),
          row("optimizer state", f(b.memory.optimizer_state_bytes_per_rank),
              f(v.memory.optimizer_state_bytes_per_rank), d.optimizer_state_bytes_per_rank_pct),
          row("peak tensor memory", f(b.peak_memory_bytes), f(v.peak_memory_bytes), d.memory_pct),
          row("comm per step", b.comm_bytes_per_step, v.comm_bytes_per_step,
              d.comm_bytes_per_step_pct)};
}

}  // namespace lockstep::reports
