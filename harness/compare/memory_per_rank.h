// Memory per rank in a comparison: what each arm's alignment run measured (parameters, gradients
// and optimizer state per rank, collective bytes per step) and the deltas between the arms, for
// report.json and the memory-per-rank table the reports show when an arm is sharded (ZeRO).
#pragma once

#include "harness/vocab/compare_result.h"
#include "harness/config/config.h"

namespace lockstep::compare {

// Copies the alignment run's accounting into the arm, and the arm's ZeRO stage and ranks from
// its config.
void fill_memory_per_rank(ArmResult& arm, const RunSummary& run, const config::Config& cfg);

// The percent changes, variant vs baseline; each unset when either arm's value is not positive
// (not measured, or nothing to compare: no collectives on one rank). A/B mode only.
void memory_per_rank_deltas(CompareResult& r);

// True when an arm shards its state (parallel.zero_stage > 0): the reports then show the table.
bool any_arm_sharded(const CompareResult& r);

}  // namespace lockstep::compare
