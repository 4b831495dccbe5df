// [optim]: AdamW with linear warmup + cosine decay and global-norm gradient clipping.
// Owned by the trainer; the update itself is a registered kernel (built in: variants/adamw.h).
#pragma once

#include <string>

#include "harness/config/config.h"

namespace lockstep::train {

struct OptimConfig {
  double lr = 0, min_lr = 0;
  int64_t warmup = 0;  // LR warmup steps (distinct from run.warmup_steps, which is about timing)
  double weight_decay = 0, beta1 = 0, beta2 = 0, eps = 0;
  double clip_grad_norm = 0;  // 0 = no clipping
  std::string impl;           // the update kernel, by registered name (harness/registry/catalog.h)

  // Learning rate at 1-based `step` of a `total`-step schedule.
  double lr_at(int64_t step, int64_t total) const;

  static OptimConfig from(const config::Config& cfg);
};

const config::SectionSchema& optim_schema();

}  // namespace lockstep::train
