// The service the server runs (issue 37): the reference transformer in inference mode, built from
// the config like a training run (precision, attention and plugin kernels from the same
// sections), returning each request's score from its last position's logits:
//   score = log softmax(logits[len - 1])[0]   (the log-probability of token 0: the "flag" class)
// Requests are right-padded to their batch's longest; attention is causal, so padding after a
// request never changes what its last position sees.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/serve/batch_plan.h"
#include "harness/serve/server.h"

namespace lockstep::train {
struct RankModel;
}

namespace lockstep::serve {

class ModelService : public Service {
 public:
  // Throws config::ConfigError (exit 2) as a training run's set-up does.
  explicit ModelService(const config::Config& cfg);
  ~ModelService() override;
  void run(int lane, const std::vector<const Request*>& batch, int64_t padded_len,
           std::vector<double>& scores) override;

  // The scores of the fixed request set (serve.score_requests, each alone: batch 1, no
  // padding): what the gate compares between two arms. Bitwise the same for the same config.
  std::vector<double> score_set(const ServeConfig& cfg);
  // Runs one planned batch on this thread: the seconds it took (the gate's service-speed turns).
  double run_batch(const PlannedBatch& b);
  // The noise envelope's copies of a service: every weight matrix x (1 + e), e ~ U(-rel, rel)
  // from `seed`, once (what autocast's rounded copy of the weights is at inference); vectors keep
  // their values.
  void perturb_weights(double rel, uint64_t seed);
  std::string device() const;
  std::string precision() const;

 private:
  std::unique_ptr<train::RankModel> m_;
  uint64_t token_seed_ = 0;
  bool first_shape_alone_ = false;  // autocast on the CPU: see model_service.cpp
  double slowdown_pct_ = 0;  // [faults] slowdown_pct: extra busy time per batch (the bench's 5%)
};

}  // namespace lockstep::serve
