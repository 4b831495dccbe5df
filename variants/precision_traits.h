// The compute precisions (`[precision] compute`) as one typed vocabulary: an enum and one traits
// table that precision (variants/precision.h), the peak lookup (harness/train/profile/peak.h), calibration
// (harness/calibrate.h), the runner and the comparison's knob classification all read, so no
// component re-interprets the config string on its own. LibTorch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/config/schema.h"

namespace lockstep::variants {

enum class Compute { FP32, TF32, BF16, FP16 };

// An element type, without LibTorch (variants/precision.h maps it to at::ScalarType).
enum class Dtype { F32, BF16, F16 };

struct ComputeTraits {
  Compute id;
  const char* name;                 // the config spelling: "fp32" | "tf32" | "bf16" | "fp16"
  std::optional<Dtype> autocast;    // autocast to this dtype for the forward; nullopt = none
  bool tf32_matmul;                 // CUDA: TF32 tensor-core matmuls and convolutions on
  bool loss_scaling;                // dynamic loss scaling (fp16's narrow exponent range)
  Compute gpu_peak;                 // the datasheet column MFU uses on a GPU
  std::optional<Compute> cpu_peak;  // the calibrated CPU GEMM peak MFU uses; nullopt = unknown
  config::Knob knob_cpu, knob_cuda;  // vs fp32: same math (exact) or other rounding
  // A CUDA variant: a CPU run refuses it (a config error), whatever its LibTorch could do there.
  bool cuda_only;
};

const ComputeTraits& traits(Compute c);
const std::vector<Compute>& all_computes();
const char* name_of(Compute c);
// nullopt for a name that is not a precision.
std::optional<Compute> parse_compute(const std::string& name);
// The precisions whose CPU GEMM peak `lockstep calibrate` measures (some precision's cpu_peak).
std::vector<Compute> calibrated_computes();
std::vector<std::string> names_of(const std::vector<Compute>& cs);

// How changing the compute precision from `a` to `b` on `device` is judged: exact when neither
// changes rounding there (tf32 on a CPU computes fp32), approximate otherwise.
config::Knob precision_change_knob(Compute a, Compute b, const std::string& device);

// The unit roundoff (half an ulp at 1.0) of what computing in `c` on `device` rounds to: bf16
// 2^-8, fp16 2^-11, tf32 2^-11 on CUDA (its 10-bit mantissa) and 2^-24 on a CPU (which computes
// fp32), fp32 2^-24. `label` spells it ("2^-8").
struct Roundoff {
  double u;
  std::string label;
};
Roundoff unit_roundoff(Compute c, const std::string& device);

}  // namespace lockstep::variants
