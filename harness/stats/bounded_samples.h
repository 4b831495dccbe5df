// A series of per-step values kept in bounded memory: all of them up to `kMax`, then a uniform
// subsample (every 2nd, 4th, ... step, decimated in place), so that a profiled window of a million
// steps costs what one of 1024 does. Deterministic: which steps are kept depends only on the count.
#pragma once

#include <cstddef>
#include <vector>

#include "harness/stats/statistics.h"

namespace lockstep::stats {

class BoundedSamples {
 public:
  static constexpr size_t kMax = 1024;  // even: a halved buffer keeps every 2*stride-th step

  void reserve(size_t steps) { kept_.reserve(steps < kMax ? steps : kMax); }
  void add(double v) {
    const size_t i = seen_++;
    if (i % stride_ != 0) return;
    if (kept_.size() == kMax) {  // keep steps 0, 2s, 4s, ...: i = kMax * s is one of them
      for (size_t j = 0; j < kMax / 2; ++j) kept_[j] = kept_[2 * j];
      kept_.resize(kMax / 2);
      stride_ *= 2;
    }
    kept_.push_back(v);
  }
  void clear() {
    kept_.clear();
    seen_ = 0;
    stride_ = 1;
  }
  size_t seen() const { return seen_; }
  const std::vector<double>& kept() const { return kept_; }
  // Median of the kept values (NaN if none).
  double median() const { return stats::median(kept_); }

 private:
  std::vector<double> kept_;
  size_t seen_ = 0, stride_ = 1;
};

}  // namespace lockstep::stats
