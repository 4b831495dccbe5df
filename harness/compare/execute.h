// Stage 2 of a comparison (plan -> execute -> analyse -> gate): runs a plan's jobs, each a child
// `lockstep run` in its own process (harness/runs/child_run.h), and returns what each produced.
// Judges nothing: a failed run is an outcome like any other.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/compare/plan.h"
#include "harness/runs/child_run.h"

namespace lockstep::compare {

using Log = std::function<void(const std::string&)>;

// The plan's alignment runs from index `from` on, plan.parallel at a time; one outcome per
// plan.alignment entry from there.
std::vector<runs::RunOutcome> execute_alignment(const ComparisonPlan& plan, const Log& log,
                                                size_t from = 0);
// What the trainers of the full runs announced (Lockstep's own trainer: everything; an external
// run without a hello: protocol 1): (baseline, variant); golden mode: the variant's twice.
std::pair<TrainerProtocol, TrainerProtocol> announced(const ComparisonPlan& plan,
                                                      const std::vector<runs::RunOutcome>& full);
// The baseline's probe checkpoints, once nothing needs them (after the probes, or when the plan
// has none: an external trainer asked for them that announced no probe).
void drop_probe_checkpoints(const ComparisonPlan& plan);
// The plan's probe runs (after the alignment runs: they read the baseline's checkpoints, which
// are removed once the probes are done: they served only them).
std::vector<runs::RunOutcome> execute_probes(const ComparisonPlan& plan, const Log& log);

// The plan's timing repeats, one at a time (a timing run never shares the machine with another),
// in plan order. Stops at the first failed run, whose outcome is the last one returned.
std::vector<runs::RunOutcome> execute_timing(const ComparisonPlan& plan, const Log& log);

// The same, continued: runs plan.timing[out.size()] .. [until - 1] onto `out` (repeats = "auto"
// runs them look by look). False when a run failed (its outcome is out's last).
bool execute_timing_until(const ComparisonPlan& plan, const Log& log, size_t until,
                          std::vector<runs::RunOutcome>& out);

}  // namespace lockstep::compare
