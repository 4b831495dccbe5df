// [precision], [attention]: the optimizations a variant switches. Each is owned by its variant
// layer (precision.h, attention.h) and applied over the unchanged model. [parallel], which the
// sharding layer (sharding.h) reads, is owned by the communicator (harness/dist/parallel_config.h).
#pragma once

#include <string>

#include "harness/config/config.h"
#include "variants/precision_traits.h"

namespace lockstep::variants {

struct PrecisionConfig {
  Compute compute = Compute::FP32;
  double loss_scale = 0;        // fp16: initial dynamic loss scale
  int64_t growth_interval = 0;  // fp16: clean steps before the scale doubles
  static PrecisionConfig from(const config::Config& cfg);
};

const config::SectionSchema& precision_schema();
const config::SectionSchema& attention_schema();

// How a change of attention.impl is judged. `declared`: by the knob classes the two registry
// entries declare (their class in fp32). Where it is exact, it stays exact only if neither config
// computes under autocast: under bf16/fp16 two attention kernels round apart (a fused kernel's
// blocks vs the math path's bf16 score matrix), approximate: judged by the noise envelope and the
// function probe (docs/method.md).
config::Knob attention_change_knob(config::Knob declared, Compute a, Compute b);

}  // namespace lockstep::variants
