#include "variants/precision.h"

#include <stdexcept>

namespace lockstep::variants {
namespace {

// Whether autocast to `dtype` works on `device` with this LibTorch (probed, not assumed).
bool autocast_works(at::DeviceType device, at::ScalarType dtype) {
  try {
    compat::set_autocast(device, true, dtype);
    auto a = torch::ones({4, 4}, torch::TensorOptions().device(device));
    auto c = torch::mm(a, a);
    compat::set_autocast(device, false, dtype);
    at::autocast::clear_cache();
    return c.scalar_type() == dtype;
  } catch (const std::exception&) {
    compat::set_autocast(device, false, at::kFloat);
    return false;
  }
}

}  // namespace

at::ScalarType scalar_type(Dtype d) {
  switch (d) {
    case Dtype::F32: return at::kFloat;
    case Dtype::BF16: return at::kBFloat16;
    case Dtype::F16: return at::kHalf;
  }
  return at::kFloat;
}

Precision::Precision(const PrecisionConfig& cfg, const torch::Device& device)
    : cfg_(cfg), device_(device.type()) {
  const bool cuda = device.is_cuda();
  const ComputeTraits& t = traits(cfg.compute);
  const std::string name = t.name;
  if (cuda) {
    at::globalContext().setAllowTF32CuBLAS(t.tf32_matmul);
    at::globalContext().setAllowTF32CuDNN(t.tf32_matmul);
  }
  if (!t.autocast) {
    description_ = !t.tf32_matmul ? name
                   : cuda ? name + " (CUDA matmul and cuDNN TF32 on)"
                          : name + ": no effect on this device (CPU has no TF32 units): computes fp32";
    return;
  }
  if (t.cuda_only && !cuda)  // LibTorch 2.x has CPU fp16 GEMMs; the variant is CUDA's
    throw std::invalid_argument(name + " autocast is not supported on cpu: " + name +
                                (t.loss_scaling ? " with dynamic loss scaling" : "") +
                                " is a CUDA variant (run.device = \"cuda\"); bf16 is the CPU's "
                                "reduced precision");
  dtype_ = scalar_type(*t.autocast);
  if (!autocast_works(device_, dtype_))
    throw std::invalid_argument(
        name + " autocast is not supported on " + (cuda ? "cuda" : "cpu") + " by LibTorch " +
        compat::torch_version() +
        (cuda ? "" : " (no " + name + " CPU GEMM); use bf16 on CPU, or run on cuda"));
  autocast_ = true;
  if (t.loss_scaling) {
    dynamic_scaling_ = true;
    scale_ = cfg.loss_scale;
    description_ = name + " autocast, dynamic loss scaling from " +
                   std::to_string(static_cast<long long>(scale_));
  } else {
    description_ = name + " autocast" + (cuda ? "" : " (oneDNN)") + ", fp32 master weights";
  }
}

Precision::Scope::Scope(const Precision& p) : p_(p) {
  if (p_.autocast_) compat::set_autocast(p_.device_, true, p_.dtype_);
}

Precision::Scope::~Scope() {
  if (!p_.autocast_) return;
  compat::set_autocast(p_.device_, false, at::kFloat);
  if (!p_.keep_casts_) at::autocast::clear_cache();
}

Precision::StepCasts::StepCasts(const Precision& p, bool keep) : p_(p), keep_(keep && p.autocast_) {
  if (keep_) p_.keep_casts_ = true;
}

Precision::StepCasts::~StepCasts() {
  if (!keep_) return;
  p_.keep_casts_ = false;
  at::autocast::clear_cache();
}

bool Precision::update(bool grads_finite) {
  if (!dynamic_scaling_) return !grads_finite;
  if (!grads_finite) {
    scale_ = std::max(1.0, scale_ / 2.0);
    clean_steps_ = 0;
    ++skips_;
    return true;
  }
  if (++clean_steps_ >= cfg_.growth_interval) {
    scale_ *= 2.0;
    clean_steps_ = 0;
  }
  return false;
}

}  // namespace lockstep::variants
