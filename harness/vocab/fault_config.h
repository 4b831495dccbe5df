// [faults]: deliberate faults for tests and demos. Owned by the fault injector
// (harness/train/faults/faults.h), which applies them at named points of the step; with the defaults
// nothing is injected.
#pragma once

#include <cstdint>

#include "harness/config/config.h"

namespace lockstep::train {

struct FaultConfig {
  int64_t stall_every = 0;  // sleep stall_ms in one step of every n (0 = off)
  int64_t stall_ms = 0;
  double slowdown_pct = 0;       // extra busy time per step, as a share of the measured step time
  int64_t nonfinite_at = 0;      // loss becomes NaN at this step (0 = off)
  int64_t corrupt_batch_at = 0;  // feed a degenerate batch (one repeated token) at this step
  int64_t lr_spike_at = 0;       // multiply the LR by 30 at this step
  int64_t grad_blowup_at = 0;    // gradient noise 1e3 x their RMS (before clipping) at this step
  int64_t stall_rank = -1;       // this rank sleeps stall_ms at step stall_at
  int64_t stall_at = 0;
  int64_t kill_rank = -1;  // this rank SIGKILLs itself at step kill_at (fault-tolerance tests)
  int64_t kill_at = 0;
  // A silent numerics bug for testing the gate: the attention logits (q k^T / sqrt(hd)) are
  // multiplied by (1 + logit_scale_drift). 0 = off.
  double logit_scale_drift = 0;
  // Rounding-sized noise: every step's forward and backward compute with each parameter x (1 + e),
  // e ~ U(-weight_rounding_noise, +weight_rounding_noise), drawn from (run.seed, noise_seed,
  // step); the update applies to the unperturbed weights. The comparison's numerical-noise
  // envelope runs the baseline with the variant dtype's unit roundoff here
  // (harness/compare/envelope.h). 0 = off.
  double weight_rounding_noise = 0;
  int64_t noise_seed = 0;

  bool stalls_at(int64_t step) const { return stall_every > 0 && step % stall_every == 0; }
  bool any() const;

  static FaultConfig from(const config::Config& cfg);
};

const config::SectionSchema& faults_schema();

}  // namespace lockstep::train
