#include "harness/conformance/reference.h"

#include <cmath>
#include <limits>

namespace lockstep::conformance::ref {

torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t T = q.size(2), hd = q.size(3);
  auto s = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));  // (B, H, T, T)
  const auto future = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool)).triu(1);
  s = s.masked_fill(future.to(q.device()), -std::numeric_limits<double>::infinity());
  const auto mx = std::get<0>(s.max(-1, /*keepdim=*/true)).detach();  // exact shift: no overflow
  const auto e = (s - mx).exp();
  return e.div(e.sum(-1, true)).matmul(v);  // (B, H, T, hd)
}

torch::Tensor activation(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  const auto h = x.matmul(w.t()) + b;  // (N, 4C)
  return 0.5 * h * (1.0 + (h / std::sqrt(2.0)).erf());
}

torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                         double eps) {
  const auto mean = x.mean(-1, true);
  const auto c = x - mean;
  const auto var = (c * c).mean(-1, true);  // biased, as LayerNorm defines it
  return c / (var + eps).sqrt() * w + b;
}

torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto mx = std::get<0>(logits.max(-1, true)).detach();
  const auto lse = (logits - mx).exp().sum(-1).log() + mx.squeeze(-1);  // (N)
  return (lse - logits.gather(1, targets.view({-1, 1})).squeeze(1)).mean();
}

void adamw(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
           const torch::Tensor& decay_mask, const plugin::AdamWStep& s) {
  torch::NoGradGuard no_grad;
  const double t = static_cast<double>(s.step);
  m.mul_(s.beta1).add_(g * (1.0 - s.beta1));
  v.mul_(s.beta2).add_(g * g * (1.0 - s.beta2));
  p.sub_(p * decay_mask * (s.lr * s.weight_decay));
  const double c1 = 1.0 - std::pow(s.beta1, t), c2 = 1.0 - std::pow(s.beta2, t);
  p.sub_(m * (s.lr / c1) / (v.sqrt() / std::sqrt(c2) + s.eps));
}

}  // namespace lockstep::conformance::ref
