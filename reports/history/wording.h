// How the history's numbers and flags read, in every history output (the report's formats,
// `history list`).
#pragma once

#include <string>

#include "harness/history/report.h"

namespace lockstep::reports::history_text {

// Why a series cannot have a flag yet ("" when it has the runs to judge): "too few runs: 1 run
// recorded; a speed change needs 3 on each side (6 runs), a loss drift 2".
std::string too_few_runs(const history::Series& s, const history::ReportOptions& o);
std::string short_commit(const std::string& commit);  // the first 7 characters, like git
// One line, e.g. "tokens/s -9.8% [-11.0%, -8.6%] (10210 -> 9209), regression first at 3f2a1b0
// (after 9c01d2e)".
std::string describe(const history::Flag& f);
std::string format_value(const std::string& metric,
                         double v);  // "10234", "31.20%", "25.40 ms", "2.103421"
std::string format_pct(double pct);  // "+9.8%" | "n/a"
std::string short_time(const std::string& recorded_at);  // "2026-01-05 12:34" (UTC)

}  // namespace lockstep::reports::history_text
