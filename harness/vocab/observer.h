// What watches a run step by step: the trainer (harness/train/trainer.h) and an external
// trainer's reader (harness/external/external_run.h) call it; reporters and writers implement it.
// Torch-free.
#pragma once

#include <cstdint>

#include "harness/vocab/records.h"

namespace lockstep::train {

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_start(int64_t first_step, int64_t last_step) {
    (void)first_step, (void)last_step;
  }
  virtual void on_step(const StepRecord& r) = 0;
};

}  // namespace lockstep::train
