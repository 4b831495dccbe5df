// A per-rank watchdog: a step that runs longer than run.step_timeout_s (or, once a few steps are
// timed, run.step_timeout_factor x their median) is reported with the phase and the collective
// the rank is in; `on_hang` writes what the run has, then the process exits with code 3. A hung
// run never hangs forever.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/train/progress.h"

namespace lockstep::train {

class Watchdog {
 public:
  Watchdog(Progress& progress, int rank, double timeout_s, double factor,
           std::function<void(const std::string&)> on_hang);
  ~Watchdog();
  void step_done(double step_ms);  // feeds the running median

 private:
  void loop();
  Progress& progress_;
  int rank_;
  double timeout_s_, factor_;
  std::function<void(const std::string&)> on_hang_;
  std::mutex mu_;
  std::vector<double> recent_ms_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace lockstep::train
