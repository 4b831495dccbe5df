// [checkpoint]: periodic checkpoints for resume. Owned by harness/train/checkpoint.h.
#pragma once

#include <cstdint>

#include "harness/config/config.h"

namespace lockstep::train {

struct CheckpointConfig {
  int64_t every = 0;  // steps between checkpoints (0 = off)
  int64_t keep = 1;   // completed checkpoints kept on disk
  static CheckpointConfig from(const config::Config& cfg);
};

const config::SectionSchema& checkpoint_schema();

}  // namespace lockstep::train
