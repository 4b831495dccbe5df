// `compare --base-ref`: the history entries of a comparison of two commits. Besides the
// comparison (its entry under the head commit), each arm is recorded as a run of CONFIG under its
// own commit, base first, so that `history report` sees the head's effect on the config's series.
#pragma once

#include <string>

#include "harness/vocab/compare_result.h"

namespace lockstep::cli {

// Records the two arms' full runs (their timed figures when the comparison timed them) in the
// database `history_db` names; a failure is a one-line warning (finish.h record_in_history).
void record_ref_arms(const compare::CompareResult& r, const std::string& history_db);

}  // namespace lockstep::cli
