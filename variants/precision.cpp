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

Precision::Precision(const PrecisionConfig& cfg, const torch::Device& device)
    : cfg_(cfg), device_(device.type()) {
  const bool cuda = device.is_cuda();
  if (cuda) {
    const bool tf32 = cfg.compute == "tf32";
    at::globalContext().setAllowTF32CuBLAS(tf32);
    at::globalContext().setAllowTF32CuDNN(tf32);
  }
  if (cfg.compute == "fp32") {
    description_ = "fp32";
  } else if (cfg.compute == "tf32") {
    description_ = cuda ? "tf32 (CUDA matmul and cuDNN TF32 on)"
                        : "tf32: no effect on this device (CPU has no TF32 units): computes fp32";
  } else {
    if (cfg.compute == "fp16" && !cuda)  // LibTorch 2.x has CPU fp16 GEMMs; the variant is CUDA's
      throw std::invalid_argument(
          "fp16 autocast is not supported on cpu: fp16 with dynamic loss scaling is a CUDA "
          "variant (run.device = \"cuda\"); bf16 is the CPU's reduced precision");
    dtype_ = cfg.compute == "bf16" ? at::kBFloat16 : at::kHalf;
    if (!autocast_works(device_, dtype_))
      throw std::invalid_argument(
          cfg.compute + " autocast is not supported on " + (cuda ? "cuda" : "cpu") +
          " by LibTorch " + compat::torch_version() +
          (cuda ? "" : " (no fp16 CPU GEMM); use bf16 on CPU, or run on cuda"));
    autocast_ = true;
    if (dtype_ == at::kHalf) {
      dynamic_scaling_ = true;
      scale_ = cfg.loss_scale;
      description_ = "fp16 autocast, dynamic loss scaling from " +
                     std::to_string(static_cast<long long>(scale_));
    } else {
      description_ =
          std::string("bf16 autocast") + (cuda ? "" : " (oneDNN)") + ", fp32 master weights";
    }
  }
}

Precision::Scope::Scope(const Precision& p) : active_(p.autocast_), device_(p.device_) {
  if (active_) compat::set_autocast(device_, true, p.dtype_);
}

Precision::Scope::~Scope() {
  if (!active_) return;
  compat::set_autocast(device_, false, at::kFloat);
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
