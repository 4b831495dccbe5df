#include "harness/serve/batch_plan.h"

#include <algorithm>
#include <map>
#include <utility>

namespace lockstep::serve {

std::vector<PlannedBatch> plan_batches(const ServeConfig& cfg, const std::vector<Request>& set) {
  std::vector<PlannedBatch> out;
  std::map<std::pair<int, int64_t>, PlannedBatch> open;  // (lane, bucket) -> the batch filling
  auto close = [&out](PlannedBatch& b) {
    for (const Request* r : b.requests) b.padded_len = std::max(b.padded_len, r->len);
    out.push_back(std::move(b));
    b = PlannedBatch{};
  };
  for (const Request& r : set) {
    const int lane = cfg.lane_of(r.len);
    if (lane < 0) continue;
    const int64_t bucket = (r.len - 1) / cfg.bucket_tokens;
    PlannedBatch& b = open[{lane, bucket}];
    b.lane = lane;
    b.requests.push_back(&r);
    if (static_cast<int64_t>(b.requests.size()) == cfg.lanes[static_cast<size_t>(lane)].max_batch_size)
      close(b);
  }
  for (auto& [key, b] : open)
    if (!b.requests.empty()) close(b);
  return out;
}

int64_t real_tokens(const std::vector<PlannedBatch>& plan) {
  int64_t n = 0;
  for (const auto& b : plan)
    for (const Request* r : b.requests) n += r->len;
  return n;
}

int64_t padded_tokens(const std::vector<PlannedBatch>& plan) {
  int64_t n = 0;
  for (const auto& b : plan) n += padded_tokens(b);
  return n;
}

}  // namespace lockstep::serve
