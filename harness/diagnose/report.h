// `lockstep diagnose`: a run folder's records, every event in them and its ranked causes
// (spikes.h, causes.h), as one result. Rendered by reports/diagnose/reporters.h (text, JSON,
// Markdown, HTML; the JSON schema is there).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/diagnose/causes.h"

namespace lockstep::diagnose {

struct DiagnoseReport {
  std::string run_dir;
  std::string name;    // from summary.json when present
  std::string status;  // from summary.json when present ("" = unknown)
  SpikeThresholds thresholds;
  RunRecords run;
  std::vector<Diagnosis> diagnoses;
};

// Reads the run folder and diagnoses it. Throws std::runtime_error naming the file on bad input.
DiagnoseReport diagnose_run(const std::filesystem::path& run_dir, const SpikeThresholds& t = {});
// The same on records already in memory.
DiagnoseReport diagnose_records(RunRecords run, const SpikeThresholds& t = {});

}  // namespace lockstep::diagnose
