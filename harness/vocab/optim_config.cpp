#include "harness/vocab/optim_config.h"

#include <algorithm>
#include <cmath>

#include "harness/registry/catalog.h"

namespace lockstep::train {
namespace {

void finalize_optim(config::Config& c) {
  if (c.number("optim.min_lr") > c.number("optim.lr"))
    c.fail(c.is_set("optim.min_lr") || !c.is_set("optim.lr")
               ? "optim.min_lr"
               : "optim.lr",  // the key the user wrote
           "min_lr must not exceed lr");
}

}  // namespace

const config::SectionSchema& optim_schema() {
  using config::KeySpec;
  static const config::SectionSchema s{
      "optim",
      "AdamW, linear warmup then cosine decay to min_lr over run.steps, global-norm clipping.",
      {
          KeySpec::Float("lr", 3e-3, "peak learning rate").range(0, 10),
          KeySpec::Float("min_lr", 3e-4, "learning rate at the last step").range(0, 10),
          KeySpec::Int("warmup", 20, "linear LR warmup steps").range(0, 100000000),
          KeySpec::Float("weight_decay", 0.1, "decoupled weight decay (matrices only)")
              .range(0, 10),
          KeySpec::Float("beta1", 0.9, "AdamW beta1").range(0, 0.999999),
          KeySpec::Float("beta2", 0.95, "AdamW beta2").range(0, 0.999999),
          KeySpec::Float("eps", 1e-8, "AdamW epsilon").range(0, 1),
          KeySpec::Float("clip_grad_norm", 1.0, "max global grad norm (0 = off)").range(0, 1e9),
          registry::impl_key(registry::Slot::Optimizer, "impl", "adamw",
                             "the AdamW update kernel: adamw (one fused pass on CPU fp32) | fused "
                             "(LibTorch's fused AdamW, CUDA) | a plugin's (`lockstep variants`)"),
      },
      finalize_optim,
  };
  return s;
}

double OptimConfig::lr_at(int64_t step, int64_t total) const {
  if (warmup > 0 && step <= warmup)
    return lr * static_cast<double>(step) / static_cast<double>(warmup);
  if (total <= warmup) return lr;
  const double progress = std::clamp(
      static_cast<double>(step - warmup) / static_cast<double>(total - warmup), 0.0, 1.0);
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

OptimConfig OptimConfig::from(const config::Config& c) {
  OptimConfig o;
  o.lr = c.number("optim.lr");
  o.min_lr = c.number("optim.min_lr");
  o.warmup = c.integer("optim.warmup");
  o.weight_decay = c.number("optim.weight_decay");
  o.beta1 = c.number("optim.beta1");
  o.beta2 = c.number("optim.beta2");
  o.eps = c.number("optim.eps");
  o.clip_grad_norm = c.number("optim.clip_grad_norm");
  o.impl = c.str("optim.impl");
  return o;
}

}  // namespace lockstep::train
