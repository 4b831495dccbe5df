#include "variants/adamw.h"

#include <cmath>

#include "variants/adamw_kernel.h"

namespace lockstep::variants {
namespace {

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
