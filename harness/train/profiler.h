// Profiling inside a window of steps, cheap enough to leave on:
//   OpProfiler   per-operator self and total time and call counts, through LibTorch's
//                RecordFunction callbacks (the same API on 1.13 and 2.x), optionally into a trace
//   LayerTimer   forward and backward time of each model unit (embedding, blocks, head + loss)
//                through the model's unit hooks and tensor hooks, for pipeline-stage planning
// Host clocks: on CUDA the per-layer and per-operator numbers are launch times, not kernel times.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "harness/train/op_table.h"
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
  // The profiled steps to expect: their per-step samples are reserved up front.
  void expect_steps(size_t window) { table_.expect_steps(window); }
  void stop();
  // Zeroes the counts, keeping what was allocated for them (after a warm-up step).
  void reset() { table_.reset(); }
  // Closes a profiled step (OpTable::step_done).
  void step_done() { table_.step_done(); }
  // The `n` operators by median self time per profiled step (OpTable::top).
  std::vector<OpStat> top(size_t n) const { return table_.top(n); }

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
  OpTable table_;
};

class LayerTimer final : public workloads::UnitHooks {
 public:
  explicit LayerTimer(int n_blocks);
  void forward_begin();
  void forward_end();  // after the loss
  void backward_begin();
  void backward_end();
  // The profiled steps to expect: their per-step samples are reserved up front.
  void expect_steps(size_t window);
  // Closes a profiled step: its per-unit times become one sample each.
  void step_done();
  // Drops every sample (after a warm-up step).
  void reset();

  void after_embedding(torch::Tensor& x) override;
  void after_forward(int unit, torch::Tensor& out) override;

  // Median ms per profiled step (a slow step does not move it): embedding, block 0..L-1,
  // head+loss.
  std::vector<UnitCost> costs() const;

 private:
  using Clock = std::chrono::steady_clock;
  double ms_since(Clock::time_point t) const;
  int n_blocks_;
  Clock::time_point fwd_t0_, last_fwd_mark_, bwd_t0_;
  std::vector<Clock::time_point> grad_ready_;  // [0] = embedding output, [i] = block i-1 output
  std::vector<double> fwd_ms_, bwd_ms_;        // [0] embedding, [1..L] blocks, [L+1] head+loss
  // Per unit, its ms in each closed step.
  std::vector<stats::BoundedSamples> fwd_steps_, bwd_steps_;
};

}  // namespace lockstep::train
