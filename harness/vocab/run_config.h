// [run]: what to run and where. Owned by the trainer (harness/train/trainer.h); the runner
// (harness/runner.h) reads it too.
#pragma once

#include <cstdint>
#include <string>

#include "harness/config/config.h"

namespace lockstep {

struct RunConfig {
  std::string name;
  int64_t seed = 0;
  int64_t steps = 0;               // optimizer steps; also the length of the LR schedule
  int64_t warmup_steps = 0;        // first steps excluded from every timing statistic
  std::string device;              // "cpu" | "cuda"
  int64_t threads = 1;             // intra-op threads per rank, fixed for determinism
  bool deterministic = true;       // deterministic kernels (and cuBLAS workspace) on
  int64_t log_every = 0;           // progress line period when not on a TTY
  double step_timeout_s = 0;       // watchdog: a step longer than this aborts the run (0 = off)
  double step_timeout_factor = 0;  // watchdog: ... or longer than this x the running median
  bool cuda_graphs = false;        // replay each micro-step's forward and backward as CUDA graphs

  static RunConfig from(const config::Config& cfg);
};

const config::SectionSchema& run_schema();

}  // namespace lockstep
