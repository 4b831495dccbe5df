// The batches a saturated batcher forms (issue 37): what the gate's service-speed turns run. Each
// request goes to its lane and its length bucket in order; a batch leaves when it holds the lane's
// max_batch_size requests (a saturated queue never waits for max_wait_ms), the partial ones last;
// each is padded to its longest request, as the server pads.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/serve/load.h"

namespace lockstep::serve {

struct PlannedBatch {
  int lane = 0;
  std::vector<const Request*> requests;  // point into the set handed to plan_batches
  int64_t padded_len = 0;
};

// Requests too long for every lane are left out. `set` must outlive the plan.
std::vector<PlannedBatch> plan_batches(const ServeConfig& cfg, const std::vector<Request>& set);

// Batch size x padded length: what one batch computes.
inline int64_t padded_tokens(const PlannedBatch& b) {
  return static_cast<int64_t>(b.requests.size()) * b.padded_len;
}
int64_t real_tokens(const std::vector<PlannedBatch>& plan);
int64_t padded_tokens(const std::vector<PlannedBatch>& plan);  // batch size x padded length

}  // namespace lockstep::serve
