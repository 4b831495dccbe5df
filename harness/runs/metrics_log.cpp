#include "harness/runs/metrics_log.h"

#include "harness/runs/run_json.h"

namespace lockstep::runs {

MetricsLog::MetricsLog(const std::filesystem::path& path, bool append) : log_(path, !append) {}

void MetricsLog::on_step(const StepRecord& r) {
  log_.append(to_json(r).dump());
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(r);
}

std::vector<StepRecord> MetricsLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

}  // namespace lockstep::runs
