#include "variants/adamw.h"

#include <ATen/Parallel.h>

#include <cmath>

namespace lockstep::variants {
namespace {

// The same update in one pass over memory (the ATen-op form below makes nine: each op reads and
// writes whole buffers, and the buffers are far larger than the caches). Per element, in this
// order: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; d = sqrt(v)/sqrt(bc2) + eps;
// p = p - lr*wd*decay*p; p = p - (lr/bc1)*m/d. Elementwise and fixed-order: deterministic for
// any thread count.
void adamw_cpu_fp32(float* __restrict p, const float* __restrict g, float* __restrict m,
                    float* __restrict v, const float* __restrict decay, int64_t n, float b1,
                    float b2, float sqrt_bc2, float eps, float lr_wd, float step) {
  const float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {  // vectorized by the compiler (see CMake flags)
      const float gi = g[i];
      const float mi = m[i] * b1 + gi * omb1;
      const float vi = v[i] * b2 + gi * gi * omb2;
      const float d = __builtin_sqrtf(vi) / sqrt_bc2 + eps;
      float pi = p[i];
      pi = pi - lr_wd * decay[i] * pi;
      pi = pi - step * mi / d;
      m[i] = mi;
      v[i] = vi;
      p[i] = pi;
    }
  });
}

bool fusable(std::initializer_list<const torch::Tensor*> ts) {
  for (const auto* t : ts)
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous() ||
        t->numel() != (*ts.begin())->numel())
      return false;
  return true;
}

}  // namespace

void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& decay, const plugin::AdamWStep& s) {
  torch::NoGradGuard no_grad;
  const double lr = s.lr;
  const int64_t t = s.step;
  const double b1 = s.beta1, b2 = s.beta2;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  const double lr_wd = s.weight_decay > 0 ? lr * s.weight_decay : 0.0;
  if (fusable({&p, &g, &m, &v, &decay})) {
    adamw_cpu_fp32(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(),
                   v.data_ptr<float>(), decay.data_ptr<float>(), p.numel(), static_cast<float>(b1),
                   static_cast<float>(b2), static_cast<float>(std::sqrt(bc2)),
                   static_cast<float>(s.eps), static_cast<float>(lr_wd),
                   static_cast<float>(lr / bc1));
    return;
  }
  // Other devices (CUDA): the same formula as tensor ops.
  m.mul_(b1).add_(g, 1.0 - b1);
  v.mul_(b2).addcmul_(g, g, 1.0 - b2);
  auto denom = v.sqrt().div_(std::sqrt(bc2)).add_(s.eps);
  if (lr_wd > 0) p.addcmul_(p, decay, -lr_wd);
  p.addcdiv_(m, denom, -lr / bc1);
}

void fused_adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m,
                        torch::Tensor& v, const torch::Tensor& decay, const plugin::AdamWStep& s) {
  torch::NoGradGuard no_grad;
  if (s.weight_decay > 0) p.addcmul_(p, decay, -s.lr * s.weight_decay);  // decoupled, masked
  compat::fused_adam_step(p, g, m, v, s.step, s.lr, s.beta1, s.beta2, s.eps);
}

}  // namespace lockstep::variants
