// [stability]: loss-spike mitigations, as variants the gate can A/B against the baseline.
// Owned by the trainer (harness/train/trainer.cpp). Gradient clipping lives in [optim].
#pragma once

#include "harness/config/config.h"

namespace lockstep::train {

struct StabilityConfig {
  double skip_outlier_z =
      0;  // skip the update when loss or grad norm is this robust-z above the window (0 = off)
  int64_t outlier_window = 50;
  double z_loss = 0;  // PaLM z-loss coefficient on log(sum(exp(logits)))^2 (0 = off)

  static StabilityConfig from(const config::Config& cfg);
};

const config::SectionSchema& stability_schema();

}  // namespace lockstep::train
