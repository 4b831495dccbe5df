// Per-operator times over a profiled window, reported per step as the median over the window's
// steps: one slow step (a page fault, a host hiccup) cannot move an operator's figure. Measured
// before this: one 19 ms log-softmax backward in the first of 5 profiled steps (0.6-0.9 ms in the
// others) put it at 4.4 ms/step in the mean, sixth in the table instead of out of the top ten.
// Torch-free: the profiler's RecordFunction callbacks feed it; tests feed it numbers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness/stats/bounded_samples.h"
#include "harness/vocab/records.h"

namespace lockstep::train {

class OpTable {
 public:
  // `window`: the steps expected, reserved up front (up to stats::BoundedSamples::kMax) so that
  // closing a step does not allocate.
  explicit OpTable(size_t window = 0) : window_(window) {}
  void expect_steps(size_t window) { window_ = window; }

  // Adds one call of operator `name` (self and total time in nanoseconds) to the open step.
  // Allocates only the first time a name is seen.
  void add(std::string_view name, double self_ns, double total_ns);
  // Closes the open step: each operator's time in it becomes one sample (0 where it did not run).
  void step_done();
  // Drops every sample and count (after a profiler warm-up), keeping what was allocated.
  void reset();
  int64_t steps() const { return steps_; }

  // The `n` operators with the largest median self time per closed step, plus every
  // "lockstep::" scope (little self time, but the totals a comparison needs). calls: mean per
  // step; self_ms, total_ms: medians over the closed steps (over a uniform subsample of them past
  // 1024). Empty before the first step_done().
  std::vector<OpStat> top(size_t n) const;

 private:
  struct Acc {
    int64_t calls = 0, open_calls = 0;  // in the closed steps; in the open one
    double self_ns = 0, total_ns = 0;   // in the open step
    stats::BoundedSamples self_by_step, total_by_step;
  };
  size_t window_;
  int64_t steps_ = 0;
  std::map<std::string, Acc, std::less<>> acc_;
};

}  // namespace lockstep::train
