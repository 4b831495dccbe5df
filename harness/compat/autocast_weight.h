// A weight in its device's autocast dtype through autocast's cache (LibTorch 1.13 and 2.x).
#pragma once

#include "harness/compat/torch_compat.h"

namespace lockstep::compat {

// The weight `w` in its device's autocast dtype, through autocast's cache, when autocast is on
// there and `w` is fp32; else `w`. What autocast does to a weight it meets itself, except that a
// GEMM that meets a view of the weight (w.t()) casts it anew at every use (the cache holds leaves
// only): cast the leaf, then take the view. The cache lives until cleared (Precision::StepCasts:
// one cast per step).
inline at::Tensor autocast_weight(const at::Tensor& w) {
  const at::DeviceType device = w.device().type();
#if LOCKSTEP_TORCH_AT_LEAST(2, 4)
  if (!at::autocast::is_autocast_enabled(device)) return w;
  const at::ScalarType dtype = at::autocast::get_autocast_dtype(device);
#else
  const bool cpu = device == at::kCPU;
  if (!(cpu ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled())) return w;
  const at::ScalarType dtype =
      cpu ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
  if (w.scalar_type() != at::kFloat) return w;
  return at::autocast::cached_cast(dtype, w, device);
}

}  // namespace lockstep::compat
