// Attention variants: the kernel the model's attention layer calls. The model is unchanged; the
// variant (`[attention] impl`, a name in the registry) only chooses which function computes
// softmax(QK^T / sqrt(hd) + causal mask) V.
#pragma once

#include "harness/compat/torch_compat.h"

namespace lockstep::variants {

// The built-in attention kernels, registered as "math" and "fused" (harness/kernels): each maps
// q, k, v (B, H, T, hd) to (B, H, T, hd).
// "math": the explicit reference, materialising the (B, H, T, T) score matrix.
torch::Tensor math_attention(const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v);
// "fused": LibTorch's scaled-dot-product attention (flash / memory-efficient kernels on CUDA with
// LibTorch 2.x; a fused CPU kernel or its own math fallback elsewhere).
torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v);

// The kernel the fused path's scaled-dot-product attention chose at its first call in this process
// (compat::sdpa_backend: flash_attention, efficient_attention, math, ...); "" before any call.
std::string sdpa_backend_used();

}  // namespace lockstep::variants
