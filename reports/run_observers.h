// Observers of a running training: the metrics log (metrics.jsonl, one flushed JSON line per
// step) and the progress display (a live line on a terminal, periodic lines otherwise).
#pragma once

#include <chrono>
#include <filesystem>
#include <mutex>
#include <vector>

#include "harness/train/trainer.h"
#include "harness/util/files.h"

namespace lockstep::reports {

class MetricsLog final : public train::StepObserver {
 public:
  // append = true keeps the existing lines (resume).
  MetricsLog(const std::filesystem::path& path, bool append);
  void on_step(const StepRecord& r) override;
  std::vector<StepRecord> snapshot() const;  // thread-safe copy (the watchdog reads it)

 private:
  util::LineLog log_;
  mutable std::mutex mu_;
  std::vector<StepRecord> records_;
};

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

// Fan-out to several observers.
class Observers final : public train::StepObserver {
 public:
  void add(train::StepObserver* o) { list_.push_back(o); }
  void on_start(int64_t a, int64_t b) override {
    for (auto* o : list_) o->on_start(a, b);
  }
  void on_step(const StepRecord& r) override {
    for (auto* o : list_) o->on_step(r);
  }

 private:
  std::vector<train::StepObserver*> list_;
};

}  // namespace lockstep::reports
