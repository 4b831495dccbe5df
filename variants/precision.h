// Precision variants, applied around the unchanged model:
//   fp32  plain fp32 (TF32 explicitly off on CUDA)
//   tf32  CUDA matmul/cuDNN TF32 flag; on CPU there are no TF32 units: reported "no effect"
//   bf16  autocast to bf16 for GEMMs (oneDNN AVX512-BF16 on CPU); master weights, optimizer
//         state and the loss stay fp32
//   fp16  autocast to fp16 + dynamic loss scaling (overflowing steps are skipped and the scale
//         halves; after growth_interval clean steps it doubles)
#pragma once

#include <memory>
#include <string>

#include "harness/compat/torch_compat.h"
#include "variants/variant_config.h"

namespace lockstep::variants {

// The LibTorch element type of a precision trait's dtype.
at::ScalarType scalar_type(Dtype d);

class Precision {
 public:
  // Throws std::invalid_argument when this device/LibTorch cannot run the precision
  // (fp16 on CPU with LibTorch 1.13); the message says why.
  Precision(const PrecisionConfig& cfg, const torch::Device& device);

  // RAII: lower-precision autocast for the forward pass and the loss. At its end autocast's
  // weight casts are dropped, unless a StepCasts is open.
  class Scope {
   public:
    Scope(const Precision& p);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const Precision& p_;
  };
  Scope forward_scope() const { return Scope(*this); }

  // RAII over a step's micro-batches: the weights' low-precision casts are made once, by the
  // first micro-batch's forward, and reused by the others (autocast's cache, which holds a cast
  // per fp32 leaf weight), then dropped at its end, before the update changes the weights. The
  // same casts of the same weights: the math is unchanged. Not under CUDA graphs (a capture's
  // casts belong to the graph's pool).
  class StepCasts {
   public:
    StepCasts(const Precision& p, bool keep);
    ~StepCasts();
    StepCasts(const StepCasts&) = delete;
    StepCasts& operator=(const StepCasts&) = delete;

   private:
    const Precision& p_;
    bool keep_;
  };
  StepCasts step_casts(bool keep) const { return StepCasts(*this, keep); }

  double loss_scale() const { return scale_; }
  // Called once per step after unscaling with whether the gradients are finite. Returns true
  // when the update must be skipped (fp16 overflow); adjusts the dynamic scale.
  bool update(bool grads_finite);
  int64_t overflow_skips() const { return skips_; }
  const std::string& describe() const { return description_; }
  // Autocasts to a lower precision (bf16, fp16) in forward_scope().
  bool autocasts() const { return autocast_; }
  // The dtype it autocasts to (fp32 when it does not).
  at::ScalarType dtype() const { return dtype_; }
  // Dynamic loss-scale state, for checkpoints.
  std::pair<double, int64_t> state() const { return {scale_, clean_steps_}; }
  void set_state(double scale, int64_t clean_steps) { scale_ = scale, clean_steps_ = clean_steps; }

 private:
  PrecisionConfig cfg_;
  at::DeviceType device_;
  bool autocast_ = false;
  mutable bool keep_casts_ = false;  // a StepCasts is open
  at::ScalarType dtype_ = at::kFloat;
  bool dynamic_scaling_ = false;
  double scale_ = 1.0;
  int64_t clean_steps_ = 0, skips_ = 0;
  std::string description_;
};

}  // namespace lockstep::variants
