// Deliberate faults ([faults], fault_config.h) at named points of the step. The injector is itself
// one of the step's hooks (step_hook.h): the trainer calls it on every step; with the defaults
// each point is one comparison and changes nothing, so a run without faults computes exactly what
// it would without the injector. The points, and the hook edge each is called at:
//
//   at_step_start  before_step: kill_rank/kill_at: this rank dies by SIGKILL (no cleanup, like a
//                  lost node)
//   lr             before_step: lr_spike_at: the learning rate jumps 30x
//   on_batch       (Data, End): corrupt_batch_at: a degenerate batch (the first token repeated)
//   on_params      (Forward, Begin) of micro-batch 0: weight_rounding_noise: the step computes
//                  with rounding-sized noise on its weights (restored in on_grads, before the
//                  update)
//   on_loss        (Forward, End): nonfinite_at: the loss becomes NaN (that step runs eagerly)
//   on_grads       (Optimizer, Begin): grad_blowup_at: noise 1e3 x the gradients' RMS on the
//                  reduced gradient
//   delay          (Other, Begin): stall_every, stall_rank/stall_at: sleep stall_ms;
//                  slowdown_pct: busy time
//   attention      not a step point: the attention kernel the model is built with sees
//                  q x (1 + logit_scale_drift), so its logits q k^T / sqrt(hd) are scaled by
//                  (1 + drift) whatever the kernel (a silent bug)
#pragma once

#include <cstdint>
#include <string>

#include "harness/compat/torch_compat.h"
#include "harness/train/hook/step_hook.h"
#include "harness/vocab/fault_config.h"
#include "workloads/gpt.h"

namespace lockstep::train {

class FaultInjector final : public StepHook {
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

  // The step hook: the points above at their edges; a step whose loss it changes runs eagerly;
  // finish() adds nonfinite_note to a non-finite run's failure.
  void before_step(int64_t step, StepRecord& rec) override;
  StepNeeds needs(int64_t step) const override { return StepNeeds{changes_loss(step), false}; }
  void on_phase(Phase phase, Edge edge, StepView& view) override;
  void finish(TrainOutcome& out) override;

 private:
  FaultConfig cfg_;
  int rank_ = 0;
  uint64_t seed_ = 0;
};

}  // namespace lockstep::train
