// `lockstep diagnose` output: text (stdout), JSON, Markdown and a self-contained HTML page (the
// loss curve drawn by gnuplot with each event marked, the step time per rank, a causes table per
// event). write_diagnosis() puts diagnosis.json / .md / .html into a folder atomically.
//
// JSON schema (the contract; extra fields may be added, never removed):
//   {"spikes": [{"step": k, "causes": [{"cause": "data"|"lr"|"grad"|"numerics"|"hardware"|"sync",
//                                      "score": x, "evidence": "..."}, ...]}, ...]}
// with causes sorted most likely first. Extras: "run", "name", "steps", "ranks", "status",
// "thresholds", "loss_judged_from" (the first step whose loss could be judged; 0: none),
// "too_short" (why a run too short to judge was not: "" when it was judged), and per spike
// "last_step", "kind", "explained", "detections".
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
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

nlohmann::json to_json(const DiagnoseReport& r);
std::string render_text(const DiagnoseReport& r);
std::string render_markdown(const DiagnoseReport& r);
std::string render_html(
    const DiagnoseReport& r);  // never fails: a plot gnuplot cannot draw says why

// Writes diagnosis.json, diagnosis.md and diagnosis.html into dir (created if needed), each
// atomically; returns their paths.
std::vector<std::filesystem::path> write_diagnosis(const DiagnoseReport& r,
                                                   const std::filesystem::path& dir);

}  // namespace lockstep::diagnose
