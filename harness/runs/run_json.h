// The JSON form of what a run folder holds (harness/runs/run_folder.h): a metrics.jsonl line per
// step, summary.json, layer_costs.json. Non-finite numbers are written as null and read back as
// NaN.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "harness/vocab/host_work.h"
#include "harness/vocab/records.h"

namespace lockstep::runs {

nlohmann::json to_json(const StepRecord& r);
StepRecord step_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunSummary& s);
RunSummary summary_from_json(const nlohmann::json& j);
// [{"file": ..., "sha256": ...}] (summary.json, report.json)
nlohmann::json plugins_json(const std::vector<PluginRef>& plugins);

// layer_costs.json: {"steps": N, "units": [{"name", "forward_ms", "backward_ms"}, ...]}.
nlohmann::json layer_costs_json(int64_t steps, const std::vector<UnitCost>& units);

// host_work.json: the profile window's host work, per step (means over "steps" counted steps):
// {"steps", "per_step": {"ops", "allocations", "syncs", "syncs_inside_step", "weight_casts"},
//  "phases": {phase: {"ops", "allocations", "syncs", "weight_casts"}},
//  "ops": [{"name", "calls", "phases": {phase: calls}, "callers": {root: calls}}] by calls}.
nlohmann::json host_work_json(const HostWork& w);

// A number, or null when non-finite.
nlohmann::json num(double x);
double num_or_nan(const nlohmann::json& j);

}  // namespace lockstep::runs
