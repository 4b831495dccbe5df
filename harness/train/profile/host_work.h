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

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "harness/train/hook/step_hook.h"

namespace lockstep::train {

// What one or more steps did on the host, per phase (indexed by Phase).
struct HostWork {
  int64_t steps = 0;
  std::map<std::string, std::array<int64_t, kPhaseCount>> ops;  // operator -> calls per phase
  // operator -> the outermost operator (or autograd node) each call ran under -> calls: who asks
  // for a fill_ or a cast. A top-level call is its own root.
  std::map<std::string, std::map<std::string, int64_t>> roots;
  std::array<int64_t, kPhaseCount> ops_in{}, allocs_in{}, syncs_in{};
  // aten::_to_copy of a parameter (a leaf that requires grad) to another dtype: autocast's
  // weight casts, and any other copy of a weight in low precision.
  std::array<int64_t, kPhaseCount> weight_casts_in{};

  int64_t calls(const std::string& op) const;  // all phases
  int64_t total_ops() const;
  int64_t total_allocs() const;
  int64_t total_syncs() const;
  int64_t total_weight_casts() const;
  // Syncs in data, forward, backward, comm and optimizer: the ones that stall a device's queue.
  int64_t syncs_inside_step() const;
};

class HostWorkHook final : public StepHook {
 public:
  // Counts steps first..last (inclusive).
  HostWorkHook(int64_t first, int64_t last);
  ~HostWorkHook() override;
  void before_step(int64_t step, StepRecord& rec) override;
  StepNeeds needs(int64_t step) const override;
  void on_phase(Phase phase, Edge edge, StepView& view) override;
  void after_step(int64_t step, const PhaseTimer& timer, const StepRecord& rec) override;

  const HostWork& counted() const { return work_; }

  struct Counter;  // the operator callback's state (host_work.cpp)

 private:
  bool counts(int64_t step) const { return step >= first_ && step <= last_; }
  int64_t first_, last_;
  HostWork work_;
  std::unique_ptr<Counter> counter_;
};

}  // namespace lockstep::train
