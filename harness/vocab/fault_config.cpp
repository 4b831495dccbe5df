#include "harness/vocab/fault_config.h"

namespace lockstep::train {

using config::KeySpec;
using config::Knob;

const config::SectionSchema& faults_schema() {
  static const config::SectionSchema s{
      "faults",
      "Injected faults, for tests and demos (all off by default).",
      {
          KeySpec::Int("stall_every", 0, "sleep stall_ms in one step of every N")
              .range(0, 1e9)
              .kind(Knob::Fault),
          KeySpec::Int("stall_ms", 200, "length of one stall").range(0, 1e9).kind(Knob::Fault),
          KeySpec::Float("slowdown_pct", 0.0, "uniform extra time per step, % of the step")
              .range(0, 1e6)
              .kind(Knob::Fault),
          KeySpec::Int("nonfinite_at", 0, "the loss becomes NaN at this step")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Int("corrupt_batch_at", 0,
                       "a degenerate batch (one repeated token) at this step")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Int("lr_spike_at", 0, "the learning rate jumps 30x at this step")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Int("grad_blowup_at", 0,
                       "gradients get noise 1e3 x their RMS before clipping at this step")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Int("stall_rank", -1, "rank that stalls at stall_at")
              .range(-1, 1e6)
              .kind(Knob::Fault),
          KeySpec::Int("stall_at", 0, "step at which stall_rank sleeps stall_ms")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Int("kill_rank", -1, "rank that SIGKILLs itself at kill_at")
              .range(-1, 1e6)
              .kind(Knob::Fault),
          KeySpec::Int("kill_at", 0, "step at which kill_rank dies")
              .range(0, 1e12)
              .kind(Knob::Fault),
          KeySpec::Float("logit_scale_drift", 0.0,
                         "a silent numerics bug: attention logits x (1 + this) (0 = off)")
              .range(-0.9, 100)
              .kind(Knob::Fault),
          KeySpec::Float("weight_rounding_noise", 0.0,
                         "each step computes with every weight matrix x (1 + U(-x, x)), the update "
                         "applies to the unperturbed ones (the comparison's noise envelope; 0 = "
                         "off)")
              .range(0, 0.1)
              .kind(Knob::Fault),
          KeySpec::Int("noise_seed", 0, "seed of weight_rounding_noise (with run.seed and the step)")
              .range(0, 1e9)
              .kind(Knob::Fault),
      },
      nullptr,
  };
  return s;
}

bool FaultConfig::any() const {
  return stall_every || slowdown_pct > 0 || nonfinite_at || corrupt_batch_at || lr_spike_at ||
         grad_blowup_at || (stall_rank >= 0 && stall_at) || (kill_rank >= 0 && kill_at) ||
         logit_scale_drift != 0 || weight_rounding_noise > 0;
}

FaultConfig FaultConfig::from(const config::Config& c) {
  FaultConfig f;
  f.stall_every = c.integer("faults.stall_every");
  f.stall_ms = c.integer("faults.stall_ms");
  f.slowdown_pct = c.number("faults.slowdown_pct");
  f.nonfinite_at = c.integer("faults.nonfinite_at");
  f.corrupt_batch_at = c.integer("faults.corrupt_batch_at");
  f.lr_spike_at = c.integer("faults.lr_spike_at");
  f.grad_blowup_at = c.integer("faults.grad_blowup_at");
  f.stall_rank = c.integer("faults.stall_rank");
  f.stall_at = c.integer("faults.stall_at");
  f.kill_rank = c.integer("faults.kill_rank");
  f.kill_at = c.integer("faults.kill_at");
  f.logit_scale_drift = c.number("faults.logit_scale_drift");
  f.weight_rounding_noise = c.number("faults.weight_rounding_noise");
  f.noise_seed = c.integer("faults.noise_seed");
  return f;
}

}  // namespace lockstep::train
