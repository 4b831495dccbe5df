// The outlier test behind [stability] skip_outlier_z: a step whose loss or gradient norm sits far
// above the recent window (robust z-score: median and MAD) gets no update. Torch-free.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "harness/vocab/stability_config.h"

namespace lockstep::train {

class OutlierWindow {
 public:
  explicit OutlierWindow(size_t window) : window_(window) {}
  // True when loss or grad_norm is more than z robust z-scores above the window (needs 10 steps
  // of history). Values of steps that are not outliers join the window.
  bool is_outlier(double loss, double grad_norm, double z);
  // The window's values, oldest first, for checkpoints: a resumed run judges its next step
  // against the same history as the uninterrupted run.
  std::vector<double> losses() const { return {losses_.begin(), losses_.end()}; }
  std::vector<double> norms() const { return {norms_.begin(), norms_.end()}; }
  void restore(const std::vector<double>& losses, const std::vector<double>& norms);

 private:
  size_t window_;
  std::deque<double> losses_, norms_;
};

}  // namespace lockstep::train
