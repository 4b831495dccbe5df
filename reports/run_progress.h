// The progress display of a running training: a live line on a terminal, periodic lines otherwise.
// An observer of the trainer; the metrics file is written by harness/runs/metrics_log.h.
#pragma once

#include <chrono>
#include <string>

#include "harness/vocab/observer.h"

namespace lockstep::reports {

class Progress final : public train::StepObserver {
 public:
  Progress(std::string name, int64_t log_every, bool tty);
  void on_start(int64_t first_step, int64_t last_step) override;
  void on_step(const StepRecord& r) override;

 private:
  std::string name_;
  int64_t log_every_;
  bool tty_;
  int64_t first_ = 1, last_ = 0;
  double timed_ms_ = 0;
  int64_t timed_tokens_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace lockstep::reports
