#include "variants/attention.h"

#include <cmath>
#include <map>

namespace lockstep::variants {
namespace {

// (T, T) boolean mask, true above the diagonal; built once per length and device.
const torch::Tensor& causal_mask(int64_t T, const torch::Device& device) {
  thread_local std::map<std::pair<int64_t, std::string>, torch::Tensor> cache;
  auto& m = cache[{T, device.str()}];
  if (!m.defined())
    m = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
  return m;
}

torch::Tensor math_attention(const torch::Tensor& q, const torch::Tensor& k,
                             const torch::Tensor& v) {
  RECORD_FUNCTION("lockstep::attention",
                  std::vector<c10::IValue>());  // one name for both kernels: comparable totals
  const int64_t T = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  // Scale q, not the (T, T) scores: T/hd times fewer multiplications.
  auto att = torch::matmul(q * scale, k.transpose(-2, -1));  // (B, H, T, T)
  att.masked_fill_(causal_mask(T, q.device()),
                   -std::numeric_limits<float>::infinity());  // a fresh tensor: in place
  att = torch::softmax(att, -1);                              // (B, H, T, T)
  return torch::matmul(att, v);                               // (B, H, T, hd)
}

torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v) {
  RECORD_FUNCTION("lockstep::attention", std::vector<c10::IValue>());
  return compat::sdpa_causal(q, k, v);  // (B, H, T, hd)
}

}  // namespace

workloads::AttentionKernel make_attention(const AttentionConfig& cfg) {
  if (cfg.impl == "fused") return fused_attention;
  return math_attention;
}

}  // namespace lockstep::variants
