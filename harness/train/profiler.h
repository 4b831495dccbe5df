// Profiling inside a window of steps, cheap enough to leave on:
//   OpProfiler   per-operator self and total time and call counts, through LibTorch's
//                RecordFunction callbacks (the same API on 1.13 and 2.x), optionally into a trace
//   LayerTimer   forward and backward time of each model unit (embedding, blocks, head + loss)
//                through the model's unit hooks and tensor hooks, for pipeline-stage planning
// Host clocks: on CUDA the per-layer and per-operator numbers are launch times, not kernel times.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "harness/train/records.h"
#include "harness/train/trace.h"
#include "workloads/gpt.h"

namespace lockstep::train {

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  // Starts recording on this thread; operator spans also go to `trace` (may be null), timed
  // against `epoch`.
  void start(TraceLog* trace, std::chrono::steady_clock::time_point epoch);
  void stop();
  // Zeroes the counts, keeping what was allocated for them (after a warm-up step).
  void reset();
  // The `top` operators by self time, per step over `steps` profiled steps.
  std::vector<OpStat> top(int64_t steps, size_t top) const;

  struct Acc {
    int64_t calls = 0;
    double self_ns = 0, total_ns = 0;
  };

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
  std::map<std::string, Acc> acc_;
};

class LayerTimer final : public workloads::UnitHooks {
 public:
  explicit LayerTimer(int n_blocks);
  void forward_begin();
  void forward_end();  // after the loss
  void backward_begin();
  void backward_end();
  void step_done() { ++steps_; }

  void after_embedding(torch::Tensor& x) override;
  void after_forward(int unit, torch::Tensor& out) override;

  // Mean ms per step: embedding, block 0..L-1, head+loss.
  std::vector<UnitCost> costs() const;
  int64_t steps() const { return steps_; }

 private:
  using Clock = std::chrono::steady_clock;
  double ms_since(Clock::time_point t) const;
  int n_blocks_;
  int64_t steps_ = 0;
  Clock::time_point fwd_t0_, last_fwd_mark_, bwd_t0_;
  std::vector<Clock::time_point> grad_ready_;  // [0] = embedding output, [i] = block i-1 output
  std::vector<double> fwd_ms_, bwd_ms_;        // [0] embedding, [1..L] blocks, [L+1] head+loss
};

}  // namespace lockstep::train
