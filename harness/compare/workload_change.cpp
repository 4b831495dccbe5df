#include "harness/compare/workload_change.h"

#include <cmath>

namespace lockstep::compare {

std::string key_list(const std::vector<std::string>& keys) {
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  return list;
}

void mark_workload_change(Alignment& a, const std::vector<std::string>& workload_keys) {
  a.klass = config::Knob::Workload;
  a.applicable = false;
  a.aligned = false;
  a.band.reset();
  a.envelope.reset();
  a.rule = Rule::NotApplicable;
  a.curve.judged = false;
  a.curve.bound = NAN;
  a.curve.bound_rule.clear();
  a.curve.passed = true;
  a.explanation = "the workload changed (" + key_list(workload_keys) +
                  "): the two curves are different computations, so their losses are shown, "
                  "not judged; the verdict rests on the timing checks";
}

}  // namespace lockstep::compare
