// Deliberate faults ([faults], fault_config.h) at named points of the step. The trainer calls
// every hook on every step; with the defaults each is one comparison and changes nothing, so a
// run without faults computes exactly what it would without the injector.
//
//   at_step_start  kill_rank/kill_at: this rank dies by SIGKILL (no cleanup, like a lost node)
//   lr             lr_spike_at: the learning rate jumps 30x
//   on_batch       corrupt_batch_at: a degenerate batch (the first token repeated)
//   on_loss        nonfinite_at: the loss becomes NaN
//   on_params      weight_rounding_noise: the step computes with rounding-sized noise on its
//                  weights (restored in on_grads, before the update)
//   on_grads       grad_blowup_at: noise 1e3 x the gradients' RMS on the reduced gradient
//   attention      logit_scale_drift: the attention kernel sees q x (1 + drift), so its logits
//                  q k^T / sqrt(hd) are scaled by (1 + drift) whatever the kernel (a silent bug)
//   delay          stall_every, stall_rank/stall_at: sleep stall_ms; slowdown_pct: busy time
#pragma once

#include <cstdint>
#include <string>

#include "harness/compat/torch_compat.h"
#include "harness/vocab/fault_config.h"
#include "workloads/gpt.h"

namespace lockstep::variants {
class Sharding;
}

namespace lockstep::train {

class FaultInjector {
 public:
  FaultInjector() = default;
  // `seed` seeds the gradient noise (with the step), so an injected blow-up is reproducible.
  FaultInjector(const FaultConfig& cfg, int rank, uint64_t seed)
      : cfg_(cfg), rank_(rank), seed_(seed) {}

  // Before anything of the step runs.
  void at_step_start(int64_t step) const;
  // The learning rate the step runs with, given the schedule's.
  double lr(int64_t step, double scheduled) const {
    return scheduled * (cfg_.lr_spike_at == step ? 30.0 : 1.0);
  }
  // A micro-batch's tokens on the host, (B, T+1) row-major, before anything reads them.
  void on_batch(int64_t step, int64_t* tokens, int64_t n) const;
  // The micro-batch's reported and differentiated loss, right after the forward.
  void on_loss(int64_t step, torch::Tensor& loss, torch::Tensor& train_loss) const;
  // Whether on_loss changes the loss at `step` (such a step's backward must run eagerly, from it).
  bool changes_loss(int64_t step) const { return cfg_.nonfinite_at == step; }
  // After the gradient buffers are zeroed, before the step's first forward.
  void on_params(int64_t step, variants::Sharding& params) const;
  // The reduced, unscaled gradients, before their norm is taken and before clipping.
  void on_grads(int64_t step, variants::Sharding& grads) const;
  // The attention kernel the model calls: `kernel` itself, or (logit_scale_drift) one that
  // scales q by (1 + drift) before calling it.
  workloads::AttentionKernel attention(workloads::AttentionKernel kernel) const;
  // After the optimizer: injected delays, part of the step. `step_started_ns` is when the step
  // began (steady clock, as Progress::step_started_ns), for slowdown_pct's share of the step.
  void delay(int64_t step, int64_t step_started_ns) const;

  // For a non-finite loss at `step`: " (injected: faults.nonfinite_at)" when on_loss caused it.
  std::string nonfinite_note(int64_t step) const;

 private:
  FaultConfig cfg_;
  int rank_ = 0;
  uint64_t seed_ = 0;
};

}  // namespace lockstep::train
