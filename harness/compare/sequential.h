// [gate] repeats = "auto": the timing repeats of a comparison as a group-sequential test. Instead
// of a fixed number of repeats, interleaved repeat pairs are added and the timing checks judged at
// planned looks (gate::Policy::looks: 6, 12, 18, ... repeats per arm, and max_repeats) until every
// timing check is decisive (pass or fail), one fails, the last look is done, or the comparison
// would run past max_minutes.
//
// Why it keeps the false-alarm rate at alpha: looking at accumulating data and stopping at the
// first significant result inflates the error rate (five looks at 0.05 reach ~0.14: Armitage,
// McPherson & Rowe 1969, "Repeated significance tests on accumulating data", JRSS A 132:235). A
// group-sequential design fixes the looks in advance and tests each at a reduced level (Pocock
// 1977, Biometrika 64:191; O'Brien & Fleming 1979, Biometrics 35:549). Lockstep uses the simplest
// valid boundary: each of the L planned looks at alpha / L (Bonferroni over the looks), with
// confidence intervals at 1 - alpha / L, Jennison & Turnbull's repeated confidence intervals (1989,
// JRSS B 51:305). By the union bound the chance of a false alarm at any look is at most alpha
// whatever the looks' correlation and whenever the sequence stops, which holds for the bootstrap
// CIs and rank tests the gate uses, where the exact boundaries of Pocock or O'Brien-Fleming
// (derived for normal statistics with independent increments) would not be exact. It is
// conservative: the price is a little power at each look.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "harness/compare/execute.h"
#include "harness/compare/plan.h"
#include "harness/vocab/compare_result.h"

namespace lockstep::compare {

// After look `look` (0-based) of `looks` planned, with these timing-check verdicts: why the
// sequence stops there, or "" to go on. elapsed_s: the comparison's wall clock so far; next_s: the
// estimated seconds the next look's repeats take.
std::string stop_reason(const std::vector<Verdict>& verdicts, size_t look, size_t looks,
                        double elapsed_s, double next_s, double max_minutes);

// Runs plan.timing (planned for policy.max_repeats) look by look and leaves in r the result
// judged at the look where the sequence stopped (r.sequential records every look). r: the result
// as analyse_alignment left it; started: when the comparison began (max_minutes counts from it).
void time_sequentially(const ComparisonPlan& plan, const Log& log,
                       std::chrono::steady_clock::time_point started, CompareResult& r);

}  // namespace lockstep::compare
