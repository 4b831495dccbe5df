// The conformance check (issue 35): a kernel against its slot's exact math (reference.h) on
// named inputs built to expose errors (cases.h), forward and backward, beside the built-in kernel
// run the same way. Error = max |kernel - fp64 reference|; bound = c x the built-in's error + a
// floor of a few fp32 ulps of the output; c = 3 for outputs, 4 for gradients (measured, see
// below). An exact kernel is held to the built-in's fp32 error, an approximate one to the
// built-in's in the same low precision.
#pragma once

#include <string>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/config/config.h"
#include "harness/registry/catalog.h"
#include "harness/vocab/conformance_result.h"
#include "variants/precision_traits.h"
#include "workloads/model_config.h"

namespace lockstep::conformance {

// c, measured (bench/RESULTS.md "Kernel conformance"): over 30 input seeds the shipped correct
// kernels (built-ins, fused_cpu in fp32 and bf16) needed up to 1.95 x the built-in's error on an
// output (cpu_bias_gelu, wide pre-activations) and 2.52 x on a gradient (cpu_causal, T 67, dq),
// so FlashAttention's 2 would leave 2.5% of margin; the mildest planted bug (a 2% softmax scale)
// is rejected by any c below 6.8. c sits between, ~1.5x above the correct kernels.
constexpr double kOutputFactor = 3.0;    // c for forward outputs
constexpr double kGradientFactor = 4.0;  // c for gradients and optimizer state

struct Target {
  registry::ImplInfo entry;  // slot, name, origin, declared knob
};

struct Options {
  torch::Device device = torch::kCPU;
  variants::Compute compute = variants::Compute::FP32;  // the variant's precision
  workloads::ModelConfig model;                          // the model's shapes
  uint64_t seed = 1234;
};

// Checks each target on every case of its slot. Never throws for a kernel that fails or throws:
// that is a failing row ("threw: ...").
ConformanceReport check(const std::vector<Target>& targets, const Options& o);

// The built-in each slot's kernels are held to: "math", "gelu", "layer_norm", "cross_entropy",
// "adamw".
const char* reference_builtin(registry::Slot slot);

}  // namespace lockstep::conformance
