// The profiling window ([profile], profile_config.h) as one state machine over the steps:
//
//   idle --(step before the window, if an untimed warmup step)--> warm-up
//   idle | warm-up --(the window's first step)--> profiling --(window steps closed)--> done
//
// While warming up or profiling, operators are recorded through RecordFunction (OpProfiler; on
// CUDA, Kineto's device times) and the model's units are timed through its hooks (LayerTimer;
// CUDA events on CUDA). A warm-up step's numbers are
// dropped when the window starts: it exists so that the profiler's own first allocations (one per
// operator name) land before the window; inside it they split heap chunks the activations reuse,
// and the first profiled step faulted in fresh memory (GELU backward measured at 20 ms instead
// of 2). A resumed run that starts inside the window never profiles.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/vocab/profile_config.h"
#include "harness/train/profile/profiler.h"
#include "harness/vocab/records.h"
#include "harness/train/profile/trace.h"
#include "workloads/gpt.h"

namespace lockstep::train {

class ProfileWindow {
 public:
  // `trace` (may be null) receives the operator spans, timed against `epoch`; `steps` is the
  // run's length (the window never holds more). `device`: on CUDA the operators are timed by
  // Kineto (where this LibTorch has it) and the units by CUDA events (profiler.h).
  ProfileWindow(const ProfileConfig& cfg, int64_t warmup_steps, int64_t steps, workloads::GPT model,
                TraceLog* trace, std::chrono::steady_clock::time_point epoch,
                const torch::Device& device);
  ProfileWindow(const ProfileWindow&) = delete;  // the model holds a pointer to the layer timer
  ProfileWindow& operator=(const ProfileWindow&) = delete;

  // Before the step's work: starts the warm-up, or the window (dropping the warm-up's numbers).
  void before_step(int64_t step);
  // Whether this step is profiled (a profiled step is never timed).
  bool profiling() const { return state_ == State::Profiling; }
  // Whether this step runs the profiler's callbacks and the unit hooks (profiled or warm-up): such
  // a step cannot be replayed as a CUDA graph.
  bool hooks_on() const { return state_ == State::WarmingUp || state_ == State::Profiling; }
  // Around the forward (up to the loss) and the backward: the layer timer's marks, in the steps
  // whose unit hooks run (profiled or warm-up).
  void forward_begin() {
    if (hooks_on()) layers_.forward_begin();
  }
  void forward_end() {
    if (hooks_on()) layers_.forward_end();
  }
  void backward_begin() {
    if (hooks_on()) layers_.backward_begin();
  }
  void backward_end() {
    if (hooks_on()) layers_.backward_end();
  }
  // After the step's work: closes a profiled step; after the window's last one, stops.
  void after_step();
  // At the end of the run (also after a failure): stops; an unfinished warm-up's numbers go.
  void finish();

  std::vector<OpStat> top_ops(size_t n) const { return ops_.top(n); }
  // CUDA kernels by device time (empty on host clocks).
  std::vector<OpStat> top_kernels(size_t n) const { return ops_.top_kernels(n); }
  // Which clock the operator times are on (summary.json environment.profile_clock).
  std::string clock() const { return ops_.clock(); }
  std::vector<UnitCost> layer_costs() const { return layers_.costs(); }
  int64_t profiled_steps() const { return profiled_; }

 private:
  enum class State { Idle, WarmingUp, Profiling, Done };
  void start();
  void stop();
  void discard_warmup();

  ProfileConfig cfg_;
  int64_t warmup_steps_;
  int64_t first_;  // the window's first step
  workloads::GPT model_;
  TraceLog* trace_;
  std::chrono::steady_clock::time_point epoch_;
  OpProfiler ops_;
  LayerTimer layers_;
  State state_ = State::Idle;
  size_t trace_mark_ = 0;  // trace size when the warm-up step began
  int64_t profiled_ = 0;
};

}  // namespace lockstep::train
