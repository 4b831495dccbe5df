#include "harness/train/adamw.h"

#include <cmath>

namespace lockstep::train {

void adamw_update(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                  const torch::Tensor& decay, double lr, int64_t t, const OptimConfig& cfg) {
  torch::NoGradGuard no_grad;
  const double b1 = cfg.beta1, b2 = cfg.beta2;
  m.mul_(b1).add_(g, 1.0 - b1);
  v.mul_(b2).addcmul_(g, g, 1.0 - b2);
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(t));
  auto denom = v.sqrt().div_(std::sqrt(bc2)).add_(cfg.eps);
  if (cfg.weight_decay > 0) p.addcmul_(p, decay, -lr * cfg.weight_decay);
  p.addcdiv_(m, denom, -lr / bc1);
}

}  // namespace lockstep::train
