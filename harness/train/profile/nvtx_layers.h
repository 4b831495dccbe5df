// [profile] nvtx: NVTX ranges for the model's units, so an Nsight Systems timeline reads like
// layer_costs.json. Forward: "embedding", "block i", "head" on the trainer thread. Backward:
// "block i backward" on the thread autograd runs it on (NVTX ranges are per thread), from the
// gradient of the block's output to that of its input.
#pragma once

#include "harness/compat/torch_compat.h"
#include "workloads/gpt.h"

namespace lockstep::train {

class NvtxLayers final : public workloads::UnitHooks {
 public:
  explicit NvtxLayers(int n_blocks) : n_blocks_(n_blocks) {}
  void before_forward(int unit) override;
  void after_embedding(torch::Tensor& x) override;
  void after_forward(int unit, torch::Tensor& out) override;

 private:
  int n_blocks_;
};

}  // namespace lockstep::train
