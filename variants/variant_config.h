// [precision], [attention], [parallel]: the optimizations a variant switches. Each is owned by
// its variant layer (precision.h, attention.h, sharding.h) and applied over the unchanged model.
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

struct ParallelConfig {
  int64_t world_size = 1;
  int64_t zero_stage = 0;
  std::string backend;  // "auto" | "gloo" | "nccl"
  double bucket_mb = 0;
  double timeout_s = 0;  // collective timeout
  static ParallelConfig from(const config::Config& cfg);
};

const config::SectionSchema& precision_schema();
const config::SectionSchema& attention_schema();
const config::SectionSchema& parallel_schema();

}  // namespace lockstep::variants
