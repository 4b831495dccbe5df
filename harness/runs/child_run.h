// A child `lockstep run`: how `compare` (its arms) and `scale` (its points) start a run in its own
// process and collect what came of it. A RunJob says what to run; this module knows how: the
// argv, the timeout, the mapping of exit codes and the outcome read back from the run folder
// (harness/runs/run_folder.h), with the log's last line when the run wrote no verdict itself.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "harness/vocab/records.h"
#include "harness/util/process.h"

namespace lockstep::runs {

// How long a child run may take before it is killed (with its process group). A backstop only:
// a run that hangs inside its steps is stopped by its own watchdog (run.step_timeout_s) and a
// lost rank by the collective timeout (parallel.timeout_s), and both write a summary saying what
// happened. This limit catches what they cannot see (a child wedged before its first step or
// after its last), so it must exceed any healthy run: compare's full-length arms train whole
// schedules, hours for a large preset on a CPU. One limit for every child run (compare had 4 h,
// scale 1 h: a scale point is shorter, but a wedged one is just as rare and as well served).
constexpr double kChildRunTimeoutS = 4 * 3600;
// A rank holding the turn this long is left behind by the turn coordinator (it goes on alone).
constexpr double kTurnGiveUpS = 600;

// What to run: `lockstep run CONFIG [--nproc N] [--set k=v]... [--stop-after W] [--probe RUN] --out DIR --quiet
// --no-history`. --no-history: a child run is part of a larger measurement, recorded (or not) as
// a whole by the command that started it.
struct RunJob {
  std::string label;              // for progress lines: "baseline", "strong-2"
  std::string config;             // config file
  std::vector<std::string> sets;  // section.key=value overrides
  int nproc = 0;                  // --nproc (0: the config's parallel.world_size)
  int64_t stop_after = 0;         // --stop-after: stop early, schedule unchanged (0: run it all)
  std::filesystem::path dir;      // its run folder: emptied first, it belongs to the caller
  // --probe: a run folder whose checkpoints the run probes instead of training; the outcome is
  // "ok" when it exits 0 having written probe.json (harness/vocab/probe_file.h).
  std::filesystem::path probe_from;
};

struct RunOutcome {
  util::ExitStatus exit;
  // summary.json's status (Ok, Nonfinite, LostRank, Hang, Failed), or what the parent saw:
  // ConfigError (exit 2), Crashed (any other failing exit without a failed summary),
  // CouldNotStart, NoSummary (exit 0 without summary.json), NoProbe, UnreadableSummary,
  // UnreadableMetrics.
  RunStatus status = RunStatus::Ok;
  std::string failure;      // one line when status != Ok
  int64_t failed_step = 0;  // from the summary; 0 when unknown
  bool has_summary = false;
  RunSummary summary;
  std::vector<StepRecord> records;  // metrics.jsonl (rank 0), as far as it got
  bool ok() const { return status == RunStatus::Ok; }
};

std::vector<std::string> child_argv(const RunJob& job);

// Runs one job to its end (or kChildRunTimeoutS) and reads its outcome. Never throws for a
// failed run: the outcome says what happened.
RunOutcome run_child(const RunJob& job);

// Runs two jobs at the same time, taking turns step by step (harness/vocab/step_turn.h). One
// rank: a socket pair between the two, each job's end as fd 3 (LOCKSTEP_TURN_FD=3). R ranks: arm
// by arm, every rank of one job takes step k together (their collectives need each other), then
// every rank of the other: rank r of each job has a socket to a coordinator thread here, as fd 3+r
// (LOCKSTEP_TURN_FDS, handed to rank r by its launcher, harness/dist/launcher.h), which hands the
// turn to all live ranks of one job and takes it back from each before the other's get theirs.
// `first` has the first turn. With `rank_cpus` (one CPU list per rank), rank r of both is pinned
// to rank_cpus[r] as it starts (before any thread of its exists): never running at once, the two
// then share those cores' speed as well as their moment. The outcomes in (first, second) order.
// Without socket pairs: one after the other.
std::pair<RunOutcome, RunOutcome> run_children_in_turns(
    const RunJob& first, const RunJob& second, const std::vector<std::vector<int>>& rank_cpus = {},
    int ranks = 1);

// Runs the jobs with at most `parallel` at once; the outcomes in job order. `slot_env[w]` (when
// given, one per slot: parallel = its size) is added to the environment of every run slot w
// starts: a slot is one run at a time, so what it names (its own GPUs) is never shared by two.
std::vector<RunOutcome> run_children(const std::vector<RunJob>& jobs, int parallel,
                                     const std::vector<std::vector<std::string>>& slot_env = {});

}  // namespace lockstep::runs
