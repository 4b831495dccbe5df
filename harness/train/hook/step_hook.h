// What runs beside the step without being the step: the turn with a timing run's peer, the faults,
// the profile window (with NVTX and the trace). Each is one StepHook with a few points; the step
// calls the list and knows none of them (google/benchmark's managers, harness/train/hooks.h).
//
// The points, in step order:
//   before_step  the step's record holds its learning rate; the step's clock has not started
//                (the turn waits here; faults.lr_spike_at and kill_at act here)
//   needs        asked once per step, after before_step: whether the step must run eagerly (no
//                CUDA-graph replay: hooks or host clocks inside it) and whether it is untimed
//   on_phase     each phase's Begin and End (harness/vocab/phase.h); what the hook may read or
//                change at an edge is in StepView
//   after_step   the step's record is closed (phase times); before its observers and checkpoint
//   finish       the run is over, failed or not: what the hook measured goes into the outcome
// At a Begin the hooks are called in the order they were added, at an End in the reverse order
// (as nested scopes close): the first hook added brackets the others.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/vocab/outcome.h"
#include "harness/vocab/phase.h"
#include "harness/vocab/records.h"

namespace lockstep::variants {
class Sharding;
}

namespace lockstep::train {

class PhaseTimer;

// The step as a hook sees it at a phase edge. Each member says at which edges it is set.
struct StepView {
  int64_t step = 0;
  int64_t micro = 0;       // the micro-batch (Data, Forward, Backward, Comm)
  int64_t started_ns = 0;  // when the step's clock started (steady clock, util/clock.h)
  StepRecord* rec = nullptr;
  // (Forward, Begin) of micro-batch 0: the weights the step computes with, gradients zeroed.
  // (Optimizer, Begin): the reduced, unscaled gradients, before their norm and clipping.
  variants::Sharding* sharding = nullptr;
  // (Data, End): the micro-batch's tokens on the host, (B, T+1), before anything reads them.
  torch::Tensor tokens;
  // (Forward, End): the micro-batch's reported and differentiated losses, before the backward.
  torch::Tensor* reported = nullptr;
  torch::Tensor* train = nullptr;
};

// What a step needs from the trainer, as a hook answers it.
struct StepNeeds {
  bool eager = false;    // no CUDA-graph replay (the hook runs code or clocks inside the step)
  bool untimed = false;  // the step's time does not count (the profile window's steps)

  StepNeeds& operator|=(const StepNeeds& o) {
    eager = eager || o.eager;
    untimed = untimed || o.untimed;
    return *this;
  }
};

class StepHook {
 public:
  virtual ~StepHook() = default;
  virtual void before_step(int64_t step, StepRecord& rec) { (void)step, (void)rec; }
  virtual StepNeeds needs(int64_t step) const { return (void)step, StepNeeds{}; }
  virtual void on_phase(Phase phase, Edge edge, StepView& view) {
    (void)phase, (void)edge, (void)view;
  }
  virtual void after_step(int64_t step, const PhaseTimer& timer, const StepRecord& rec) {
    (void)step, (void)timer, (void)rec;
  }
  virtual void finish(TrainOutcome& out) { (void)out; }
};

// The hooks of a run. Owned hooks, or borrowed ones that outlive the list (the fault injector
// lives in the model it is configured with).
class StepHooks final : public StepHook {
 public:
  void add(std::unique_ptr<StepHook> h) {
    hooks_.push_back(h.get());
    owned_.push_back(std::move(h));
  }
  void add(StepHook& h) { hooks_.push_back(&h); }

  void before_step(int64_t step, StepRecord& rec) override {
    for (auto* h : hooks_) h->before_step(step, rec);
  }
  StepNeeds needs(int64_t step) const override {
    StepNeeds n;
    for (const auto* h : hooks_) n |= h->needs(step);
    return n;
  }
  void on_phase(Phase phase, Edge edge, StepView& view) override {
    if (edge == Edge::Begin)
      for (auto* h : hooks_) h->on_phase(phase, edge, view);
    else
      for (auto it = hooks_.rbegin(); it != hooks_.rend(); ++it) (*it)->on_phase(phase, edge, view);
  }
  void after_step(int64_t step, const PhaseTimer& timer, const StepRecord& rec) override {
    for (auto* h : hooks_) h->after_step(step, timer, rec);
  }
  void finish(TrainOutcome& out) override {
    for (auto* h : hooks_) h->finish(out);
  }

 private:
  std::vector<StepHook*> hooks_;
  std::vector<std::unique_ptr<StepHook>> owned_;
};

}  // namespace lockstep::train
