// `lockstep run`: one training run, end to end. Resolves the config and the output folder, becomes
// the launcher when the job needs several ranks and none were launched, otherwise trains this
// rank and writes its run folder: config.toml, metrics.jsonl (metrics.rank<r>.jsonl for r > 0),
// summary.json, trace.rank<r>.json, layer_costs.json and checkpoints/; it also records the run in
// the history and writes --export-losses.
#pragma once

#include <string>
#include <vector>

#include "harness/config/config.h"

namespace lockstep {

struct RunRequest {
  std::string config;             // config file (unused with resume)
  std::vector<std::string> sets;  // section.key=value overrides
  int64_t steps = 0;              // --steps: overrides run.steps (the schedule length)
  int64_t stop_after = 0;         // --stop-after: stop early, schedule unchanged
  std::string out;                // output folder (default runs/<time>-<name>)
  int nproc = 0;                  // --nproc: overrides parallel.world_size
  std::string resume;             // a previous run's folder to continue
  std::string export_losses;      // write the golden file here (harness/compare/golden_file.h)
  bool no_envelope = false;       // --no-envelope: export without the noise envelope's K runs
  // --probe: a run folder whose checkpoints to probe instead of training (harness/train/probe/probe.h);
  // writes probe.json and probe.bin into the output folder.
  std::string probe;
  bool quiet = false;
  std::string history;      // --history: the history database (default: see history::resolve_path)
  bool no_history = false;  // --no-history: do not record this run
};

// Returns the exit code: 0 ok, 2 usage error, 3 the run failed (non-finite, lost rank, hang).
// Throws config::ConfigError or UsageError (exit 2) for a bad config or output folder.
int run_training(const RunRequest& req);

// The flags of a request that stand for config keys (--steps, --nproc), named as typed.
std::vector<config::FlagOverride> request_flags(const RunRequest& req);

}  // namespace lockstep
