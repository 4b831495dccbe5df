// Each slot's exact math, written once in double precision from the definitions in
// include/lockstep/plugin.h (masking, scale, eps, bias correction, decay mask), out of elementary
// operations only (matmul, exp, log, erf, sqrt, sums): never the LibTorch kernel a built-in calls,
// so a reference cannot share a kernel's bug. Inputs are float64; the gradients of a reference are
// autograd's over these operations (the exact derivative, rounded in fp64).
#pragma once

#include "harness/compat/torch_compat.h"
#include "include/lockstep/plugin.h"

namespace lockstep::conformance::ref {

// softmax(q k^T / sqrt(hd) + causal mask) v; q, k, v (B, H, T, hd) -> (B, H, T, hd).
torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
// gelu(x w^T + b) with the exact (erf) GELU; x (N, C), w (4C, C), b (4C) -> (N, 4C).
torch::Tensor activation(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);
// (x - mean) / sqrt(var + eps) * w + b over the last dimension, var the biased variance.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                         double eps);
// The mean over rows of logsumexp(logits) - logits[target]; logits (N, V), targets (N) -> ().
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);
// One AdamW step, in place on float64 buffers, exactly plugin.h's formula.
void adamw(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
           const torch::Tensor& decay_mask, const plugin::AdamWStep& s);

}  // namespace lockstep::conformance::ref
