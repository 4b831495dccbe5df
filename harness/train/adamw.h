// AdamW over flat fp32 buffers. Every sharding stage calls this same elementwise update on the
// slice of parameters it owns, so ZeRO changes where the math runs, never the math.
#pragma once

#include "harness/compat/torch_compat.h"
#include "harness/train/optim_config.h"

namespace lockstep::train {

// One update at 1-based optimizer step t. p, g, m, v, decay: same shape; decay is 1 where weight
// decay applies (matrices and embeddings) and 0 elsewhere (biases, LayerNorm).
void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& decay, double lr, int64_t t, const OptimConfig& cfg);

}  // namespace lockstep::train
