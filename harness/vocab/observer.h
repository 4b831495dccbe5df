// What watches a run step by step: the trainer (harness/train/trainer.h) and an external
// trainer's reader (harness/external/external_run.h) call it; reporters and writers implement it.
// Torch-free.
#pragma once

#include <cstdint>
#include <vector>

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

// Fan-out to several observers (the run folder's log, the progress display, the watchdog).
class Observers final : public StepObserver {
 public:
  void add(StepObserver* o) { list_.push_back(o); }
  void on_start(int64_t a, int64_t b) override {
    for (auto* o : list_) o->on_start(a, b);
  }
  void on_step(const StepRecord& r) override {
    for (auto* o : list_) o->on_step(r);
  }

 private:
  std::vector<StepObserver*> list_;
};

}  // namespace lockstep::train
