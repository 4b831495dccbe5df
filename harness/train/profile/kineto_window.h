// Device-side operator and kernel times for a profiled window on CUDA, through LibTorch's Kineto
// profiler with CUDA activity (CUPTI). Compiled in every build; records only in a CUDA build of
// LibTorch 2.x that has Kineto (start() says why not otherwise).
//
// Steps are delimited by a user-scope RecordFunction ("lockstep::profiled_step") that Kineto
// records like any operator: an operator belongs to the step whose range holds its start (on
// whichever thread it ran: the CPU events share one clock), a kernel to the step of the operator
// that launched it (Kineto links the two by correlation id).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "harness/train/profile/op_table.h"
#include "harness/train/profile/trace.h"

namespace lockstep::train {

class KinetoWindow {
 public:
  KinetoWindow();
  ~KinetoWindow();
  // Starts Kineto (CPU and CUDA activities) and opens the first step. False, with the reason in
  // `why`, when this LibTorch cannot.
  bool start(std::string* why);
  // Closes the open step (kept) and opens the next.
  void step_done();
  // Closes the open step, dropped (a profiler warm-up), and opens the next.
  void drop_open_step();
  // Stops Kineto. Each kept step's operators go to `ops` (self: device time of the kernels the
  // operator launched itself; total: with the operators it called) and its kernels to `kernels`
  // (device time), one step_done() per kept step; operator and kernel spans go to `trace` (lanes:
  // the trainer's threads, then 100 + the CUDA stream), timed against `epoch`. Returns whether the
  // times are device times: Kineto without CUDA activity (CUPTI unavailable or restricted to
  // admin users) records no kernel, and then the operators get their host spans.
  bool stop(OpTable& ops, OpTable& kernels, TraceLog* trace,
            std::chrono::steady_clock::time_point epoch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::train
