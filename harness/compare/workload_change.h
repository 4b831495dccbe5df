// A variant that changes the workload itself (batch size, sequence length, model shape, data,
// optimizer, seed: config::Knob::Workload) computes something else: its loss curve is not the
// baseline's under any tolerance. Such a comparison has no alignment verdict ("not applicable:
// the workload changed"); both arms are still timed, and the gate's verdict rests on the timing
// checks (and a memory rule, when the policy has one) only.
#pragma once

#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"

namespace lockstep::compare {

// Marks an alignment computed over the two curves as not applicable: class "workload", no verdict
// (aligned = false, applicable = false), the explanation naming the keys. The numbers (losses at
// the check step, max |delta|) stay, for the reader, unjudged.
void mark_workload_change(Alignment& a, const std::vector<std::string>& workload_keys);

// "data.batch_size, model.seq_len"
std::string key_list(const std::vector<std::string>& keys);

}  // namespace lockstep::compare
