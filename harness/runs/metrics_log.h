// The writer of a run folder's metrics file (metrics.jsonl, metrics.rank<r>.jsonl): one flushed
// JSON line per step, so a crash or SIGKILL leaves only whole lines. An observer of the trainer.
#pragma once

#include <filesystem>
#include <mutex>
#include <vector>

#include "harness/vocab/observer.h"
#include "harness/util/files.h"

namespace lockstep::runs {

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

}  // namespace lockstep::runs
