#include "harness/runs/run_folder.h"

#include <fstream>
#include <stdexcept>

#include "harness/runs/run_json.h"
#include "harness/util/files.h"

namespace lockstep::runs {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path RunFolder::metrics(int64_t rank) const {
  return dir_ / (rank == 0 ? std::string("metrics.jsonl")
                           : "metrics.rank" + std::to_string(rank) + ".jsonl");
}

fs::path RunFolder::trace(int64_t rank) const {
  return dir_ / ("trace.rank" + std::to_string(rank) + ".json");
}

bool RunFolder::holds_run() const {
  return fs::exists(config());
}

void RunFolder::write_config(const std::string& toml) const {
  util::write_atomic(config(), toml);
}

void RunFolder::write_summary(const RunSummary& s) const {
  util::write_atomic(summary(), to_json(s).dump(2) + "\n");
}

void RunFolder::write_host_work(const HostWork& w) const {
  util::write_atomic(host_work(), host_work_json(w).dump(2) + "\n");
}

void RunFolder::write_layer_costs(int64_t steps, const std::vector<UnitCost>& units) const {
  util::write_atomic(layer_costs(), layer_costs_json(steps, units).dump(2) + "\n");
}

std::vector<std::vector<StepRecord>> RunFolder::read_rank_metrics() const {
  std::vector<std::vector<StepRecord>> ranks;
  ranks.push_back(read_metrics(metrics(0)));
  for (int64_t r = 1; fs::exists(metrics(r)); ++r) ranks.push_back(read_metrics(metrics(r)));
  return ranks;
}

std::string RunFolder::last_log_line() const {
  return util::last_nonempty_line(log());
}

std::vector<StepRecord> read_metrics(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::vector<StepRecord> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      out.push_back(step_from_json(json::parse(line)));
    } catch (const std::exception& e) {
      throw std::runtime_error(path.string() + ":" + std::to_string(n) +
                               ": unreadable metrics line: " + e.what());
    }
  }
  return out;
}

RunSummary read_summary(const fs::path& path) {
  try {
    return summary_from_json(json::parse(util::read_file(path)));
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": unreadable summary: " + e.what());
  }
}

json read_layer_costs(const fs::path& path) {
  try {
    return json::parse(util::read_file(path));
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": not JSON: " + e.what());
  }
}

void truncate_metrics(const fs::path& path, int64_t last_step) {
  if (!fs::exists(path)) return;
  std::ifstream in(path);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      if (step_from_json(json::parse(line)).step > last_step) break;
    } catch (...) {
      break;  // a torn line: everything after the checkpoint is recomputed anyway
    }
    kept += line + "\n";
  }
  util::write_atomic(path, kept);
}

}  // namespace lockstep::runs
