// An external arm's run: starts the [external] command with its placeholders expanded, reads the
// metrics file it writes while it runs (harness/external/metrics_reader.h), hands each validated
// step to the observers (the run folder's metrics.jsonl, the progress display), and watches it:
// run.step_timeout_s and run.step_timeout_factor between two lines (the watchdog), and
// external.timeout_s for the whole run. It never throws for a failed trainer: the outcome says
// what went wrong, in one line.
//
// Files, in the arm's run folder OUT:
//   OUT/external/metrics.jsonl   what the trainer writes ({metrics}, $LOCKSTEP_METRICS), kept as is
//   OUT/external/trainer.log     the trainer's stdout and stderr
// The arm (harness/external/external_arm.h) writes OUT/config.toml, OUT/metrics.jsonl and
// OUT/summary.json, as for Lockstep's own trainer, so compare, bisect, diagnose and the history
// read it unchanged.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/vocab/observer.h"
#include "harness/vocab/outcome.h"
#include "harness/vocab/trainer_protocol.h"

namespace lockstep::external {

// A TrainOutcome, so one builder makes the summary of either trainer (harness/runs/summary.h):
//   status             Ok | Failed | Nonfinite | Hang; failure: one line when status != Ok
//   records            every validated step, `timed` set
//   peak_memory_bytes  the largest the trainer reported (0: none)
//   peak_rss_bytes     the trainer process's high-water mark (0: unknown)
// The rest of a TrainOutcome stays empty: an external trainer reports no profile.
struct ExternalOutcome : train::TrainOutcome {
  std::string command_line;         // the command as run (placeholders expanded)
  TrainerProtocol protocol;         // what the trainer announced (protocol 1: nothing)
  std::string turns_ended;          // with LOCKSTEP_TURN_FD: why the turns ended before the run
};

struct ExternalRunOptions {
  int64_t stop_after = 0;  // stop the trainer once it has written this step (0: run it all)
  // Protocol 2's probe (docs/protocol.md): checkpoints at these steps into checkpoint_dir ...
  std::vector<int64_t> checkpoint_steps;
  std::filesystem::path checkpoint_dir;
  // ... and a probe run: forwards at these checkpoints (step-NNNNNNNN), sketches into probe_out.
  std::vector<std::filesystem::path> probe_checkpoints;
  std::filesystem::path probe_out;
  int64_t probe_batches = 2;
};

// The files of an external run inside its run folder.
std::filesystem::path trainer_metrics(const std::filesystem::path& out);
std::filesystem::path trainer_log(const std::filesystem::path& out);

ExternalOutcome run_external(const config::Config& cfg, const std::filesystem::path& out,
                             const ExternalRunOptions& opts, train::StepObserver& observer);

// A probe run of an external arm (opts.probe_checkpoints, opts.probe_out): the trainer runs its
// forwards and writes probe.json/probe.bin into probe_out; no metrics. The outcome's status is
// Failed (one line naming the file) when it exits non-zero, trains instead, or writes nothing.
ExternalOutcome run_external_probe(const config::Config& cfg, const std::filesystem::path& out,
                                   const ExternalRunOptions& opts);

}  // namespace lockstep::external
