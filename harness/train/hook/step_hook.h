// What runs beside the step without being the step: faults, the profile window (with NVTX and
// the trace), the turn with a timing run's peer. Each is one StepHook; the step calls the list at
// fixed points and knows none of them (google/benchmark's managers, harness/train/hooks.h).
//
// The points, in step order:
//   before_step   before the step's clock starts (the turn)
//   begin_step    the record exists: learning rate, whether the step is timed, the profiler
//   on_weights    the weights this step computes with, gradients zeroed (weight noise)
//   on_batch      a micro-batch's tokens on the host, before anything reads them
//   forward_*, backward_*   around the model's forward and backward (layer timers)
//   on_loss       a micro-batch's loss, right after the forward
//   on_grads      the reduced, unscaled gradients, before their norm and clipping
//   before_read   after the optimizer, before the loss is read (injected delays)
//   end_step      the phase timer has closed the step: spans into the trace, the window
//   after_step    after observers and the checkpoint: not part of the step (hand the turn over)
//   finish        the run is over, failed or not: what the hook measured goes into the outcome
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/vocab/outcome.h"
#include "harness/vocab/records.h"

namespace lockstep::variants {
class Sharding;
}

namespace lockstep::train {

class PhaseTimer;

class StepHook {
 public:
  virtual ~StepHook() = default;
  virtual void before_step(int64_t step, StepRecord& rec) { (void)step, (void)rec; }
  virtual void begin_step(int64_t step, StepRecord& rec) { (void)step, (void)rec; }
  // Whether `step` must run eagerly (no CUDA-graph replay): hooks or host clocks inside it.
  virtual bool needs_eager(int64_t step) const { return (void)step, false; }
  virtual void on_weights(int64_t step, variants::Sharding& params) { (void)step, (void)params; }
  virtual void on_batch(int64_t step, int64_t* tokens, int64_t n) {
    (void)step, (void)tokens, (void)n;
  }
  virtual void on_phase(const char* phase) { (void)phase; }
  virtual void forward_begin() {}
  virtual void forward_end() {}
  virtual void backward_begin() {}
  virtual void backward_end() {}
  virtual void on_loss(int64_t step, torch::Tensor& reported, torch::Tensor& train) {
    (void)step, (void)reported, (void)train;
  }
  virtual void on_grads(int64_t step, variants::Sharding& grads) { (void)step, (void)grads; }
  virtual void before_read(int64_t step) { (void)step; }
  virtual void end_step(int64_t step, const PhaseTimer& timer, StepRecord& rec) {
    (void)step, (void)timer, (void)rec;
  }
  virtual void after_step(int64_t step) { (void)step; }
  virtual void finish(TrainOutcome& out) { (void)out; }
  // Why a non-finite loss at `step` happened, when the hook caused it ("" otherwise).
  virtual std::string nonfinite_note(int64_t step) const { return (void)step, ""; }
};

// The hooks of a run, called in the order they were added.
class StepHooks final : public StepHook {
 public:
  void add(std::unique_ptr<StepHook> h) { hooks_.push_back(std::move(h)); }

  void before_step(int64_t step, StepRecord& rec) override {
    for (auto& h : hooks_) h->before_step(step, rec);
  }
  void begin_step(int64_t step, StepRecord& rec) override {
    for (auto& h : hooks_) h->begin_step(step, rec);
  }
  bool needs_eager(int64_t step) const override {
    for (const auto& h : hooks_)
      if (h->needs_eager(step)) return true;
    return false;
  }
  void on_weights(int64_t step, variants::Sharding& p) override {
    for (auto& h : hooks_) h->on_weights(step, p);
  }
  void on_batch(int64_t step, int64_t* tokens, int64_t n) override {
    for (auto& h : hooks_) h->on_batch(step, tokens, n);
  }
  void on_phase(const char* phase) override {
    for (auto& h : hooks_) h->on_phase(phase);
  }
  void forward_begin() override {
    for (auto& h : hooks_) h->forward_begin();
  }
  void forward_end() override {
    for (auto& h : hooks_) h->forward_end();
  }
  void backward_begin() override {
    for (auto& h : hooks_) h->backward_begin();
  }
  void backward_end() override {
    for (auto& h : hooks_) h->backward_end();
  }
  void on_loss(int64_t step, torch::Tensor& reported, torch::Tensor& train) override {
    for (auto& h : hooks_) h->on_loss(step, reported, train);
  }
  void on_grads(int64_t step, variants::Sharding& g) override {
    for (auto& h : hooks_) h->on_grads(step, g);
  }
  void before_read(int64_t step) override {
    for (auto& h : hooks_) h->before_read(step);
  }
  void end_step(int64_t step, const PhaseTimer& timer, StepRecord& rec) override {
    for (auto& h : hooks_) h->end_step(step, timer, rec);
  }
  void after_step(int64_t step) override {
    for (auto& h : hooks_) h->after_step(step);
  }
  void finish(TrainOutcome& out) override {
    for (auto& h : hooks_) h->finish(out);
  }
  std::string nonfinite_note(int64_t step) const override {
    std::string note;
    for (const auto& h : hooks_) note += h->nonfinite_note(step);
    return note;
  }

 private:
  std::vector<std::unique_ptr<StepHook>> hooks_;
};

}  // namespace lockstep::train
