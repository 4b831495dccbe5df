// What the kernel tests (plugin_kernels_test.cpp, fused_cuda_test.cpp) share: the error measure a
// kernel is judged by against LibTorch's own op, and leaf copies of the inputs for autograd.
#pragma once

#include <initializer_list>
#include <vector>

#include "harness/compat/torch_compat.h"

namespace lockstep::testing {

// max |a - b| / (max |b| + tiny): a relative error over the whole tensor.
inline double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  auto a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  return (a64 - b64).abs().max().item<double>() / (b64.abs().max().item<double>() + 1e-30);
}

// Leaf copies on `device` that require grad.
inline std::vector<torch::Tensor> leaves(std::initializer_list<torch::Tensor> ts,
                                         torch::Device device = torch::kCPU) {
  std::vector<torch::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().to(device).clone().requires_grad_(true));
  return out;
}

}  // namespace lockstep::testing
