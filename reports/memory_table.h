// The memory-per-rank table of a comparison (console, Markdown, HTML), shown whenever an arm is
// sharded (parallel.zero_stage > 0): what ZeRO is for, per rank, side by side.
#pragma once

#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"

namespace lockstep::reports {

// "baseline ZeRO stage 0 on 2 ranks, variant ZeRO stage 3 on 2 ranks".
std::string memory_table_caption(const compare::CompareResult& r);

// Header row {"", "baseline", "variant", "delta"}, then one row each: parameters, gradients,
// optimizer state, peak tensor memory, comm per step (bytes as "1.2 MiB", deltas "-50.0%", "n/a"
// when unknown).
std::vector<std::vector<std::string>> memory_table_rows(const compare::CompareResult& r);

}  // namespace lockstep::reports
