#include "variants/attention.h"

#include <cmath>

namespace lockstep::variants {
namespace {

torch::Tensor math_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  RECORD_FUNCTION("lockstep::attention", std::vector<c10::IValue>());  // one name for both kernels: comparable totals
  const int64_t T = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  auto att = torch::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, T, T)
  auto mask = torch::ones({T, T}, q.options().dtype(torch::kBool)).triu(1);  // (T, T), true above diagonal
  att = att.masked_fill(mask, -std::numeric_limits<float>::infinity());
  att = torch::softmax(att, -1);                              // (B, H, T, T)
  return torch::matmul(att, v);                               // (B, H, T, hd)
}

torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  RECORD_FUNCTION("lockstep::attention", std::vector<c10::IValue>());
  return compat::sdpa_causal(q, k, v);  // (B, H, T, hd)
}

}  // namespace

workloads::AttentionKernel make_attention(const AttentionConfig& cfg) {
  if (cfg.impl == "fused") return fused_attention;
  return math_attention;
}

}  // namespace lockstep::variants
