// A run folder: what `lockstep run` writes (docs/run-folder.md) and what every command
// that reads a run finds there (compare, scale, bisect, diagnose, stages, the history). The one
// place that knows the files' names and formats (their JSON form: harness/runs/run_json.h):
//
//   config.toml            the effective config (its presence marks a folder that holds a run)
//   metrics.jsonl          one JSON line per step (rank 0); metrics.rank<r>.jsonl for r > 0
//   summary.json           the run's summary
//   layer_costs.json       per-layer forward/backward ms of the profiled window
//   host_work.json         the profiled window's host work per step (ops, allocations, syncs)
//   trace.rank<r>.json     Chrome trace events of rank r
//   checkpoints/           completed checkpoints (harness/train/checkpoint.h)
//   lockstep.log           a child run's stdout and stderr (harness/runs/child_run.h)
//
// Writers are atomic (temp file, then rename); metrics.jsonl is appended line by line
// (harness/runs/metrics_log.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/vocab/host_work.h"
#include "harness/vocab/records.h"

namespace lockstep::runs {

class RunFolder {
 public:
  explicit RunFolder(std::filesystem::path dir) : dir_(std::move(dir)) {}
  const std::filesystem::path& dir() const { return dir_; }

  std::filesystem::path config() const { return dir_ / "config.toml"; }
  std::filesystem::path metrics(int64_t rank = 0) const;  // metrics.jsonl | metrics.rank<r>.jsonl
  std::filesystem::path summary() const { return dir_ / "summary.json"; }
  std::filesystem::path layer_costs() const { return dir_ / "layer_costs.json"; }
  std::filesystem::path host_work() const { return dir_ / "host_work.json"; }
  std::filesystem::path trace(int64_t rank) const;
  std::filesystem::path checkpoints() const { return dir_ / "checkpoints"; }
  std::filesystem::path log() const { return dir_ / "lockstep.log"; }

  bool holds_run() const;  // config.toml exists

  void write_config(const std::string& toml) const;
  void write_summary(const RunSummary& s) const;
  void write_layer_costs(int64_t steps, const std::vector<UnitCost>& units) const;
  void write_host_work(const HostWork& w) const;

  // Every rank's metrics: metrics.jsonl, then metrics.rank<r>.jsonl for r = 1, 2, ... while
  // present, each as written (step order). Throws like read_metrics.
  std::vector<std::vector<StepRecord>> read_rank_metrics() const;
  // The last non-empty line of lockstep.log (usually the error); "" when there is none.
  std::string last_log_line() const;

 private:
  std::filesystem::path dir_;
};

// Reads a metrics file; a torn line (a crash mid-write) is reported as an error naming the line.
std::vector<StepRecord> read_metrics(const std::filesystem::path& path);
// Throws std::runtime_error naming the file when it is unreadable.
RunSummary read_summary(const std::filesystem::path& path);
// layer_costs.json as JSON (its validation is the stage planner's: harness/diagnose/stages.h).
// Throws std::runtime_error naming the file when it is not JSON.
nlohmann::json read_layer_costs(const std::filesystem::path& path);

// Keeps the lines of a metrics file up to `last_step` (a resumed run continues after it); a torn
// line ends what is kept.
void truncate_metrics(const std::filesystem::path& path, int64_t last_step);

}  // namespace lockstep::runs
