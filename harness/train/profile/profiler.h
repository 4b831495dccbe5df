// Profiling inside a window of steps, cheap enough to leave on:
//   OpProfiler   per-operator self and total time and call counts, optionally into a trace.
//                CPU: LibTorch's RecordFunction callbacks on host clocks. CUDA (LibTorch 2.x with
//                Kineto): Kineto's CUDA activity, so an operator's time is the device time of the
//                kernels it launched, and each kernel's device time is reported too.
//   LayerTimer   forward and backward time of each model unit (embedding, blocks, head + loss)
//                through the model's unit hooks and tensor hooks, for pipeline-stage planning:
//                host clocks on CPU, CUDA events on the compute stream on CUDA.
// Which clock the numbers are on is stated by OpProfiler::clock() (environment.profile_clock).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/train/profile/op_table.h"
#include "harness/vocab/records.h"
#include "harness/train/profile/trace.h"
#include "workloads/gpt.h"

namespace lockstep::train {

class KinetoWindow;

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  // The device the window profiles: on CUDA the profiler uses Kineto when this LibTorch has it.
  void set_device(const torch::Device& device);
  // Starts recording on this thread and on the threads it hands work to (autograd's device
  // threads get its RecordFunction callbacks with at::ThreadLocalState); operator spans also go
  // to `trace` (may be null), timed against `epoch`.
  void start(TraceLog* trace, std::chrono::steady_clock::time_point epoch);
  // The profiled steps to expect: their per-step samples are reserved up front.
  void expect_steps(size_t window) { table_.expect_steps(window), kernels_.expect_steps(window); }
  void stop();
  // Zeroes the counts, keeping what was allocated for them (after a warm-up step).
  void reset();
  // Closes a profiled step (OpTable::step_done).
  void step_done();
  // The `n` operators by median self time per profiled step (OpTable::top).
  std::vector<OpStat> top(size_t n) const { return table_.top(n); }
  // The `n` CUDA kernels by median device time per profiled step (empty on host clocks).
  std::vector<OpStat> top_kernels(size_t n) const { return kernels_.top(n); }
  // What the times mean: "host: ..." or "device: ..." (summary.json environment.profile_clock).
  std::string clock() const;

  struct Session;  // what the RecordFunction callbacks feed (profiler.cpp)

 private:
  uint64_t handle_ = 0;
  bool active_ = false;
  bool cuda_ = false;
  OpTable table_, kernels_;
  std::unique_ptr<Session> session_;
  TraceLog* trace_ = nullptr;
  std::chrono::steady_clock::time_point epoch_;
  std::unique_ptr<KinetoWindow> kineto_;  // set while Kineto records
  std::string kineto_unavailable_;        // why a CUDA window fell back to host clocks
};

class LayerTimer final : public workloads::UnitHooks {
 public:
  // `device`: CUDA -> each boundary is a CUDA event on the current stream (read once the step has
  // synchronized); else a host clock.
  explicit LayerTimer(int n_blocks, const torch::Device& device = torch::Device(torch::kCPU));
  ~LayerTimer() override;
  void forward_begin();
  void forward_end();  // after the loss
  void backward_begin();
  void backward_end();
  // The profiled steps to expect: their per-step samples are reserved up front.
  void expect_steps(size_t window);
  // Closes a profiled step: its per-unit times become one sample each. Call after the step's
  // host sync (its device events are read here).
  void step_done();
  // Drops every sample (after a warm-up step).
  void reset();

  void after_embedding(torch::Tensor& x) override;
  void after_forward(int unit, torch::Tensor& out) override;

  // Median ms per profiled step (a slow step does not move it): embedding, block 0..L-1,
  // head+loss.
  std::vector<UnitCost> costs() const;

 private:
  struct Stamp;
  std::shared_ptr<Stamp> stamp() const;
  double ms(const std::shared_ptr<Stamp>& a, const std::shared_ptr<Stamp>& b) const;
  int n_blocks_;
  bool device_events_ = false;
  // One micro-step's boundaries: forward [begin, after embedding, after each block, end] and
  // backward [begin, grad of each block's output ready (last block first), grad of the
  // embedding's output ready, end]. Read at step_done.
  struct Micro {
    std::vector<std::shared_ptr<Stamp>> fwd;
    std::vector<std::shared_ptr<Stamp>> grad_ready;  // [0] = embedding output, [i] = block i-1
    std::shared_ptr<Stamp> bwd_begin, bwd_end;
  };
  std::vector<Micro> micros_;
  // Per unit, its ms in each closed step.
  std::vector<stats::BoundedSamples> fwd_steps_, bwd_steps_;
};

}  // namespace lockstep::train
