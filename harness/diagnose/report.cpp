#include "harness/diagnose/report.h"

#include "harness/runs/run_folder.h"

namespace lockstep::diagnose {
namespace fs = std::filesystem;

DiagnoseReport diagnose_records(RunRecords run, const SpikeThresholds& t) {
  DiagnoseReport r;
  r.thresholds = t;
  r.run = std::move(run);
  r.diagnoses = diagnose(r.run, t);
  return r;
}

DiagnoseReport diagnose_run(const fs::path& run_dir, const SpikeThresholds& t) {
  DiagnoseReport r = diagnose_records(read_run(run_dir), t);
  r.run_dir = run_dir.string();
  const runs::RunFolder folder(run_dir);
  if (fs::exists(folder.summary())) {
    try {
      auto s = runs::read_summary(folder.summary());
      r.name = s.name;
      r.status = to_string(s.status);
    } catch (const std::exception&) {
      // A torn summary (a crashed run) still leaves metrics to diagnose.
    }
  }
  return r;
}

}  // namespace lockstep::diagnose
