// Attention variants: the kernel the model's attention layer calls. The model is unchanged; the
// variant only chooses which function computes softmax(QK^T / sqrt(hd) + causal mask) V.
#pragma once

#include "variants/variant_config.h"
#include "workloads/gpt.h"

namespace lockstep::variants {

// "math": the explicit reference, materialising the (B, H, T, T) score matrix.
// "fused": LibTorch's scaled-dot-product attention (flash / memory-efficient kernels on CUDA with
// LibTorch 2.x; a fused CPU kernel or its own math fallback elsewhere).
workloads::AttentionKernel make_attention(const AttentionConfig& cfg);

// The kernel the fused path's scaled-dot-product attention chose at its first call in this process
// (compat::sdpa_backend: flash_attention, efficient_attention, math, ...); "" before any call.
std::string sdpa_backend_used();

}  // namespace lockstep::variants
