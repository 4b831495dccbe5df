// JSON form of a run's records (metrics.jsonl lines, summary.json). Non-finite numbers are
// written as null and read back as NaN.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/train/records.h"

namespace lockstep::reports {

nlohmann::json to_json(const StepRecord& r);
StepRecord step_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunSummary& s);
RunSummary summary_from_json(const nlohmann::json& j);
// [{"file": ..., "sha256": ...}] (summary.json, report.json)
nlohmann::json plugins_json(const std::vector<PluginRef>& plugins);

// Reads metrics.jsonl; a torn last line (a crash mid-write) is reported as an error naming the
// line.
std::vector<StepRecord> read_metrics(const std::filesystem::path& path);
RunSummary read_summary(const std::filesystem::path& path);

// A number, or null when non-finite.
nlohmann::json num(double x);
double num_or_nan(const nlohmann::json& j);

}  // namespace lockstep::reports
