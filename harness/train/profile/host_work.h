// The host work of a step, counted (issue 52): the operators it dispatches (by name), the tensor
// allocations it makes and the host syncs it waits for, each attributed to the step's phase that
// was open (harness/vocab/phase.h), so that "no sync inside the step" reads as: none in data,
// forward, backward, comm or optimizer; the loss and gradient-norm reads in `other`.
//
// How it counts:
//   operators  every RecordFunction of scope FUNCTION (every aten op the dispatcher runs, nested
//              ones included: what a PyTorch profiler lists as aten::*), on the trainer's thread
//              and on autograd's (the callback is global while a counted step is open);
//   weight casts  aten::_to_copy of a parameter (a leaf that requires grad);
//   syncs      aten::_local_scalar_dense (what item() and a scalar read run; on CUDA each one
//              waits for the device), and copies to the CPU from another device;
//   allocs     the CPU allocator's allocations (a counting allocator in front of LibTorch's, for
//              the whole process once installed) and, on CUDA, the caching allocator's
//              allocation requests (its statistics).
// Counted steps run slower (a callback per operator): the hook asks for them to be untimed.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/train/hook/step_hook.h"
#include "harness/vocab/host_work.h"

namespace lockstep::train {

using lockstep::HostWork;  // harness/vocab/host_work.h

class HostWorkHook final : public StepHook {
 public:
  // Counts steps first..last (inclusive).
  HostWorkHook(int64_t first, int64_t last);
  ~HostWorkHook() override;
  void before_step(int64_t step, StepRecord& rec) override;
  StepNeeds needs(int64_t step) const override;
  void on_phase(Phase phase, Edge edge, StepView& view) override;
  void after_step(int64_t step, const PhaseTimer& timer, const StepRecord& rec) override;
  // The counted steps into the run's outcome (host_work.json), when any were counted.
  void finish(TrainOutcome& out) override;

  const HostWork& counted() const { return work_; }

  struct Counter;  // the operator callback's state (host_work.cpp)

 private:
  bool counts(int64_t step) const { return step >= first_ && step <= last_; }
  int64_t first_, last_;
  HostWork work_;
  std::unique_ptr<Counter> counter_;
};

}  // namespace lockstep::train
