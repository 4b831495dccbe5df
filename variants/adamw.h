// AdamW over flat fp32 buffers: the built-in optimizer kernel, registered as "adamw"
// (harness/kernels/builtins.cpp). Every sharding stage calls this same elementwise update on the
// slice of parameters it owns, so ZeRO changes where the math runs, never the math.
#pragma once

#include "harness/compat/torch_compat.h"
#include "include/lockstep/plugin.h"

namespace lockstep::variants {

// One update at 1-based optimizer step s.step with learning rate s.lr and the [optim]
// hyperparameters in s. p, g, m, v, decay: same shape; decay is 1 where weight decay applies
// (matrices and embeddings) and 0 elsewhere (biases, LayerNorm).
void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& decay, const plugin::AdamWStep& s);

// The same update through LibTorch's fused AdamW kernel (registered as "fused", CUDA only): the
// masked weight decay as above, then at::_fused_adamw_ without decay. Its float arithmetic in
// one kernel rounds differently from the tensor-op form: an approximate knob.
void fused_adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                        torch::Tensor& v, const torch::Tensor& decay, const plugin::AdamWStep& s);

}  // namespace lockstep::variants
