// Kernels with the bugs a custom-kernel pull request makes, each one conformance must reject
// naming its case (tests/e2e/conformance_test.cpp, issue 35). Each computes the slot's math the
// way the bug says; nothing else differs from the built-ins.
#include <lockstep/plugin.h>

#include <cmath>
#include <limits>

namespace conformance_bugs {

torch::Tensor causal_scores(const torch::Tensor& q, const torch::Tensor& k, double scale) {
  const int64_t T = q.size(2);
  auto s = torch::matmul(q, k.transpose(-2, -1)) * (scale / std::sqrt(static_cast<double>(q.size(3))));
  auto future = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  return s.masked_fill(future, -std::numeric_limits<float>::infinity());  // (B, H, T, T)
}

// The softmax scale 2% too large: logits x 1.02.
torch::Tensor scale_2pct(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  return torch::matmul(torch::softmax(causal_scores(q, k, 1.02), -1), v);
}

// The softmax denominator and P.V accumulated in bf16, 16 keys at a time, rounded after each add.
torch::Tensor bf16_accumulate(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  auto s = causal_scores(q, k, 1.0).to(torch::kFloat32);
  auto p = (s - std::get<0>(s.max(-1, true))).exp();  // (B, H, T, T)
  const int64_t T = q.size(2), blk = 16;
  auto sum = torch::zeros({q.size(0), q.size(1), T, 1}, q.options().dtype(torch::kBFloat16));
  auto acc = torch::zeros(v.sizes(), v.options().dtype(torch::kBFloat16));
  for (int64_t j = 0; j < T; j += blk) {
    const int64_t n = std::min(blk, T - j);
    auto pj = p.narrow(-1, j, n);
    sum = (sum.to(torch::kFloat32) + pj.sum(-1, true)).to(torch::kBFloat16);
    acc = (acc.to(torch::kFloat32) + torch::matmul(pj, v.narrow(2, j, n).to(torch::kFloat32)))
              .to(torch::kBFloat16);
  }
  return (acc.to(torch::kFloat32) / sum.to(torch::kFloat32)).to(v.scalar_type());
}

// The softmax without the row max subtracted: exp overflows on large logits.
torch::Tensor no_max_subtraction(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  auto e = causal_scores(q, k, 1.0).exp();
  return torch::matmul(e / e.sum(-1, true), v);
}

// GELU with the tanh approximation, declared exact (the exact one is erf's).
torch::Tensor gelu_tanh(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return torch::gelu(torch::linear(x, w, b), "tanh");
}

// AdamW that decays every element, ignoring the decay mask.
void adamw_no_mask(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                   const torch::Tensor&, const lockstep::plugin::AdamWStep& s) {
  const double t = static_cast<double>(s.step);
  m.mul_(s.beta1).add_(g, 1.0 - s.beta1);
  v.mul_(s.beta2).addcmul_(g, g, 1.0 - s.beta2);
  p.mul_(1.0 - s.lr * s.weight_decay);
  const double c1 = 1.0 - std::pow(s.beta1, t), c2 = 1.0 - std::pow(s.beta2, t);
  p.addcdiv_(m, v.sqrt().div_(std::sqrt(c2)).add_(s.eps), -s.lr / c1);
}

}  // namespace conformance_bugs

extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r) {
  using namespace conformance_bugs;
  using lockstep::plugin::Knob;
  r.attention("scale_2pct", Knob::Approximate, scale_2pct, "softmax scale 2% too large (a bug)");
  r.attention("bf16_accumulate", Knob::Approximate, bf16_accumulate,
              "softmax sum and P.V accumulated in bf16 (a bug)");
  r.attention("no_max_subtraction", Knob::Exact, no_max_subtraction,
              "softmax without the row max subtracted (a bug)");
  r.activation("gelu_tanh", Knob::Exact, gelu_tanh, "tanh-approximated GELU declared exact (a bug)");
  r.optimizer("adamw_no_mask", Knob::Exact, adamw_no_mask, "AdamW ignoring the decay mask (a bug)");
}
