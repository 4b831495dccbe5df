// The conformance check (issue 35): a kernel against its slot's exact math (reference.h) on
// named inputs built to expose errors (cases.h), forward and backward, beside the built-in kernel
// run the same way. Error = max |kernel - fp64 reference|; bound = c x the built-in's error + a
// floor of a few fp32 ulps of the output; c = 2 for outputs, 3 for gradients (docs/method.md
// "Kernel conformance" says how c was chosen). An exact kernel is held to the built-in's fp32
// error, an approximate one to the built-in's at the variant's precision.
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

constexpr double kOutputFactor = 2.0;    // c for forward outputs (FlashAttention's tests use 2)
constexpr double kGradientFactor = 3.0;  // c for gradients and optimizer state

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
