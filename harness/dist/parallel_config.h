// [parallel]: how many ranks, over which c10d backend, and the ZeRO stage the sharding variant
// (variants/sharding.h) runs. Owned by the communicator (harness/dist/comm.h), which the sharding
// layer is built on: it lives here so that variants/ depends on harness/dist/, never the reverse.
#pragma once

#include <cstdint>
#include <string>

#include "harness/config/config.h"

namespace lockstep::dist {

struct ParallelConfig {
  int64_t world_size = 1;
  int64_t zero_stage = 0;
  std::string backend;  // "auto" | "gloo" | "nccl"
  double bucket_mb = 0;
  double timeout_s = 0;  // collective timeout
  static ParallelConfig from(const config::Config& cfg);
};

const config::SectionSchema& parallel_schema();

}  // namespace lockstep::dist
