// [data]: where tokens come from and how many per step. Owned by workloads/data.h.
#pragma once

#include <cstdint>
#include <string>

#include "harness/config/config.h"

namespace lockstep::workloads {

struct DataConfig {
  std::string source;      // "synthetic" | "text" | "tokens"
  std::string path;        // resolved against the folder of the file that set it
  int64_t batch_size = 0;  // global sequences per micro-step, split evenly over the ranks
  int64_t grad_accum = 1;  // micro-steps per optimizer step
  int64_t fanout = 4;      // synthetic: successors per Markov state

  static DataConfig from(const config::Config& cfg);
};

const config::SectionSchema& data_schema();

}  // namespace lockstep::workloads
