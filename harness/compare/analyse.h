// Stage 3 of a comparison (plan -> execute -> analyse -> gate): the runs' outcomes, read against
// the plan, become the CompareResult the gate judges and the reports print: the arms, the loss
// alignment (tolerance, noise envelope or seed band), the determinism self-check, the per-arm
// aggregates and the deltas with their confidence intervals (statistics: comparison_stats.h). Runs
// nothing and writes nothing.
#pragma once

#include <vector>

#include "harness/compare/plan.h"
#include "harness/vocab/compare_result.h"
#include "harness/runs/child_run.h"

namespace lockstep::compare {

// The result as far as the alignment runs tell (one outcome per plan.alignment entry): arms,
// failures, alignment and the memory delta. Not yet timed, not yet judged.
// What a result knows from the plan alone (mode, policy, warnings, arms' names and plugins): where
// analyse_alignment starts, and all a comparison rejected by kernel conformance has.
CompareResult result_from_plan(const ComparisonPlan& plan);

CompareResult analyse_alignment(const ComparisonPlan& plan,
                                const std::vector<runs::RunOutcome>& alignment);

// Adds the function probe (the outcomes execute_probes returned, in plan.probes order) to
// r.alignment: with the envelope rule the variant aligns only if the probe passes too. A probe
// run that fails is its arm's failure.
void analyse_probe(const ComparisonPlan& plan, const std::vector<runs::RunOutcome>& probes,
                   CompareResult& r);

// Whether the timing repeats run: an A/B comparison whose runs all completed and whose loss
// aligns (an optimization that changes the math is rejected before its speed matters).
bool should_time(const CompareResult& r);

// Adds the timing repeats (the outcomes execute_timing returned, in plan order) to r: the
// per-arm repeats, and when every repeat ran, determinism, aggregates, breakdown and deltas.
void analyse_timing(const ComparisonPlan& plan, const std::vector<runs::RunOutcome>& timing,
                    CompareResult& r);

}  // namespace lockstep::compare
