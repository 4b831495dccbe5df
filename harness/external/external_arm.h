// An arm with an [external] section, as `lockstep run` runs it: the trainer's command trains (or
// probes), Lockstep reads and checks what it writes (external_run.h) and writes the same run
// folder as for its own trainer: config.toml, metrics.jsonl, summary.json, so compare, bisect,
// diagnose and the history read it unchanged. The runner (harness/runner.cpp) supplies what takes
// LibTorch or the machine to know: the calibration, the peak FLOPs, the environment, the progress
// display, and it finishes the run (harness/finish.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "harness/config/config.h"
#include "harness/external/external_run.h"
#include "harness/vocab/observer.h"
#include "harness/vocab/records.h"

namespace lockstep::external {

// Trains the arm into its run folder OUT: OUT/config.toml, OUT/metrics.jsonl (each validated step,
// also to `progress` unless null), the checkpoints protocol 2's probe asks for (at the steps
// Lockstep's own trainer would keep with the same [checkpoint]); stops the trainer once it has
// written step `stop_after` (0: runs it all). Prints why the turns with a peer ended early.
ExternalOutcome train_arm(const config::Config& cfg, const std::filesystem::path& out,
                          int64_t stop_after, train::StepObserver* progress);

// The arm's summary, written to OUT/summary.json: `env` describes the machine (the trainer's own
// entries are added), `peak_flops` is this machine's peak for MFU (unset: unknown, as when
// [external] flops_per_token is not set; `peak_source` says which).
RunSummary write_arm_summary(const config::Config& cfg, const std::filesystem::path& out,
                             ExternalOutcome o, std::map<std::string, std::string> env,
                             std::optional<double> peak_flops, const std::string& peak_source);

// `run --probe RUN` of an external arm (protocol 2): the trainer runs its forwards at the
// checkpoints it wrote in RUN (step-NNNNNNNN) and writes OUT/probe.json and OUT/probe.bin, which
// must cover exactly those checkpoints. Returns the exit code; throws UsageError when RUN has no
// checkpoint.
int probe_arm(const config::Config& cfg, const std::filesystem::path& out,
              const std::string& probe_run, bool quiet);

}  // namespace lockstep::external
