// A weight in its device's autocast dtype through autocast's cache (LibTorch 1.13 and 2.x).
#pragma once

#include "harness/compat/torch_compat.h"

namespace lockstep::compat {

// A step's own low-precision copies of the weights (variants/weight_copies.h): while one is
// installed on this thread (weight_source()), autocast_weight() takes a weight it holds from it
// instead of casting the weight.
class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // `w`'s copy in `dtype`, or nullptr when this source holds none.
  virtual const at::Tensor* find(const at::Tensor& w, at::ScalarType dtype) = 0;
};

// This thread's installed source (nullptr: none). Thread-local: serving's lanes run forwards on
// their own threads, outside any training step.
inline WeightSource*& weight_source() {
  thread_local WeightSource* source = nullptr;
  return source;
}

// The weight `w` in its device's autocast dtype when autocast is on there and `w` is fp32, else
// `w`: from the installed WeightSource when it holds `w`, else through autocast's cache. What
// autocast does to a weight it meets itself, except that a GEMM that meets a view of the weight
// (w.t()) casts it anew at every use (the cache holds leaves only): cast the leaf, then take the
// view. The cache lives until cleared (Precision::StepCasts: one cast per step).
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
  if (WeightSource* source = weight_source())
    if (const at::Tensor* copy = source->find(w, dtype)) return *copy;
  return at::autocast::cached_cast(dtype, w, device);
}

}  // namespace lockstep::compat
