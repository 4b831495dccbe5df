#include "harness/vocab/host_work.h"

namespace lockstep {

namespace {

int64_t over_phases(const std::array<int64_t, kPhaseCount>& per_phase) {
  int64_t n = 0;
  for (const auto v : per_phase) n += v;
  return n;
}

}  // namespace

int64_t HostWork::calls(const std::string& op) const {
  const auto it = ops.find(op);
  return it == ops.end() ? 0 : over_phases(it->second);
}
int64_t HostWork::total_ops() const { return over_phases(ops_in); }
int64_t HostWork::total_allocs() const { return over_phases(allocs_in); }
int64_t HostWork::total_syncs() const { return over_phases(syncs_in); }
int64_t HostWork::total_weight_casts() const { return over_phases(weight_casts_in); }
int64_t HostWork::syncs_inside_step() const {
  int64_t n = 0;
  for (const Phase p :
       {Phase::Data, Phase::Forward, Phase::Backward, Phase::Comm, Phase::Optimizer})
    n += syncs_in[static_cast<int>(p)];
  return n;
}

}  // namespace lockstep
