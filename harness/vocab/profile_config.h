// [profile]: a window of steps in which the trainer profiles operators (RecordFunction) and
// per-layer costs, and which steps the Chrome trace covers. Owned by harness/train/profile/profiler.h.
#pragma once

#include "harness/config/config.h"

namespace lockstep::train {

struct ProfileConfig {
  int64_t window = 0;  // profiled steps (0 = off)
  int64_t start = 0;   // first profiled step (0 = the first step after run.warmup_steps)
  bool trace = true;   // write trace.rank<r>.json (phases of every step, operators in the window)
  bool nvtx = false;   // NVTX ranges for Nsight Systems (CUDA): step, phases, layers, collectives
  bool host_work = true;  // count the window's host work per step into host_work.json

  // The window's first step: `start`, or the step after the warmup.
  int64_t first_step(int64_t warmup_steps) const { return start > 0 ? start : warmup_steps + 1; }
  // Whether `step` lies in the window (profiled, hence never timed).
  bool covers(int64_t step, int64_t warmup_steps) const {
    return window > 0 && step >= first_step(warmup_steps) &&
           step < first_step(warmup_steps) + window;
  }

  static ProfileConfig from(const config::Config& cfg);
};

const config::SectionSchema& profile_schema();

}  // namespace lockstep::train
