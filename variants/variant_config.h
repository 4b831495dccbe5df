// [precision], [attention]: the optimizations a variant switches. Each is owned by its variant
// layer (precision.h, attention.h) and applied over the unchanged model. [parallel], which the
// sharding layer (sharding.h) reads, is owned by the communicator (harness/dist/parallel_config.h).
#pragma once

#include <string>

#include "harness/config/config.h"

namespace lockstep::variants {

struct PrecisionConfig {
  std::string compute;          // "fp32" | "tf32" | "bf16" | "fp16"
  double loss_scale = 0;        // fp16: initial dynamic loss scale
  int64_t growth_interval = 0;  // fp16: clean steps before the scale doubles
  static PrecisionConfig from(const config::Config& cfg);
};

struct AttentionConfig {
  std::string impl;  // "math" | "fused"
  static AttentionConfig from(const config::Config& cfg);
};

const config::SectionSchema& precision_schema();
const config::SectionSchema& attention_schema();

// How a change of precision.compute is judged: tf32 is a no-op on CPU (exact); bf16/fp16 change
// rounding (approximate: judged against the seed band).
config::Knob precision_knob(const std::string& from, const std::string& to,
                            const std::string& device);
// How a change of attention.impl is judged under precision.compute `compute`: in fp32 the kernels
// agree to rounding (exact); under bf16/fp16 a fused kernel rounds its blocks differently from the
// math path's bf16 score matrix (approximate: judged against the seed band).
config::Knob attention_knob(const std::string& compute);

}  // namespace lockstep::variants
