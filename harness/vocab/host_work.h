// The host work of one or more training steps, counted (issue 52): operators dispatched (by name
// and by the step's phase that was open), tensor allocations, host syncs and weight casts.
// Torch-free: the counting is harness/train/profile/host_work.h's; a run folder writes it as
// host_work.json (harness/runs/run_json.h).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "harness/vocab/phase.h"

namespace lockstep {

// What one or more steps did on the host, per phase (indexed by Phase).
struct HostWork {
  int64_t steps = 0;
  std::map<std::string, std::array<int64_t, kPhaseCount>> ops;  // operator -> calls per phase
  // operator -> the outermost operator (or autograd node) each call ran under -> calls: who asks
  // for a fill_ or a cast. A top-level call is its own root.
  std::map<std::string, std::map<std::string, int64_t>> roots;
  std::array<int64_t, kPhaseCount> ops_in{}, allocs_in{}, syncs_in{};
  // aten::_to_copy of a parameter (a leaf that requires grad) to another dtype: autocast's
  // weight casts, and any other copy of a weight in low precision.
  std::array<int64_t, kPhaseCount> weight_casts_in{};

  int64_t calls(const std::string& op) const;  // all phases
  int64_t total_ops() const;
  int64_t total_allocs() const;
  int64_t total_syncs() const;
  int64_t total_weight_casts() const;
  // Syncs in data, forward, backward, comm and optimizer: the ones that stall a device's queue.
  int64_t syncs_inside_step() const;
};

}  // namespace lockstep
