// Lockstep's plugin interface: register your own kernels and gate them like any built-in.
//
// A plugin is a shared library built against this header (CMake: find_package(LockstepPlugin),
// link Lockstep::plugin) that exports
//
//   extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r);
//
// and registers implementations there, each with a name, a knob class, a kernel and a one-line
// description:
//
//   r.activation("my_gelu", lockstep::plugin::Knob::Approximate, my_gelu,
//                "bias + GELU in one pass, fp32 math on bf16 tiles");
//
// A config selects it by name (`[model] activation = "my_gelu"`) once it loads the library
// (`[plugins] load = ["build/libmykernels.so"]`, relative to the config file). `lockstep
// variants --plugin FILE` lists what a library registers.
//
// The knob class is a promise the gate holds you to: Knob::Exact = the same math as the built-in
// up to ~1e-6 (the loss must agree to 5e-4 at the check step), Knob::Approximate = the same math
// up to rounding: the loss curve must lie inside the noise envelope (the baseline rerun with every
// weight perturbed by a relative uniform noise at the rounding's size) and the function probe's
// drift at fixed weights must stay within its bound (docs/method.md). Only where no envelope can
// run (golden mode, a v1 external trainer) is the baseline's seed-to-seed band the rule.
//
// Kernels take and return LibTorch tensors. Autograd flows through whatever LibTorch ops a kernel
// calls; a kernel with a hand-written backward wraps it in a torch::autograd::Function. Kernels
// run inside the precision's autocast scope: under `[precision] compute = "bf16"` on a CPU,
// at::autocast::is_cpu_enabled() is true and LibTorch's own GEMMs return bf16. A kernel that
// throws, or returns a tensor of the wrong shape, fails the run (exit 3) naming the slot, the
// name and the step; everything written before stays.
//
// The library must be built with the same LibTorch version and C++ ABI as the lockstep binary
// that loads it (the loader checks LOCKSTEP_PLUGIN_ABI and the LibTorch version and refuses a
// mismatch with a one-line error).
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// The version of this interface. A plugin built against another ABI is refused.
#define LOCKSTEP_PLUGIN_ABI 1

namespace lockstep::plugin {

enum class Knob { Exact, Approximate };

// ---- kernel signatures, one per slot ---------------------------------------------------------
// Shapes: B batch, T sequence, C d_model, H heads, hd = C / H, V vocabulary, N = B * T.

// attention: causal self-attention, softmax(q k^T / sqrt(hd) + causal mask) v.
//   q, k, v (B, H, T, hd) -> (B, H, T, hd). Built-ins: "math", "fused" (scaled-dot-product).
using AttentionFn =
    std::function<torch::Tensor(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v)>;

// activation: the MLP's expansion with its activation, act(x weight^T + bias), so a kernel can
// fuse the bias into the activation (and the bias gradient into its backward).
//   x (N, C), weight (4C, C), bias (4C) -> (N, 4C). Built-in: "gelu" (exact erf GELU of
//   LibTorch's addmm).
using ActivationFn =
    std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias)>;

// layer_norm: LayerNorm over the last dimension with an affine weight and bias.
//   x (B, T, C), weight (C), bias (C), eps -> (B, T, C). Built-in: "layer_norm".
using LayerNormFn =
    std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& weight,
                                const torch::Tensor& bias, double eps)>;

// loss: mean cross-entropy of the logits against the targets, as an fp32 scalar.
//   logits (N, V) in the forward's dtype (bf16 under bf16 autocast), targets (N) int64 -> ().
//   Built-in: "cross_entropy" (LibTorch's, on the logits cast to fp32).
using LossFn =
    std::function<torch::Tensor(const torch::Tensor& logits, const torch::Tensor& targets)>;

// optimizer: one AdamW step, in place, on flat fp32 buffers of one parameter group (or the slice
// of it a ZeRO rank owns):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
//   p -= lr * weight_decay * decay * p;  p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// param, grad, exp_avg, exp_avg_sq, decay_mask: same shape; decay_mask is 1 where weight decay
// applies and 0 elsewhere. Built-in: "adamw".
struct AdamWStep {
  double lr = 0;
  int64_t step = 0;  // 1-based optimizer step t
  double beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
};
using OptimizerFn = std::function<void(torch::Tensor& param, const torch::Tensor& grad,
                                       torch::Tensor& exp_avg, torch::Tensor& exp_avg_sq,
                                       const torch::Tensor& decay_mask, const AdamWStep& s)>;

class Registry;

// What a registration returns: optional restrictions on the entry.
class Entry {
 public:
  Entry(Registry& r, int id) : r_(&r), id_(id) {}
  // The devices the kernel runs on ("cpu", "cuda"); a config that selects it for another device
  // is refused with a one-line config error. Default: any device.
  inline Entry& devices(std::vector<std::string> allowed);

 private:
  Registry* r_;
  int id_;
};

// Where implementations are registered. Lockstep's own built-ins register through this same
// interface. Registering a name twice, or a built-in's name, fails the plugin's load.
class Registry {
 public:
  virtual ~Registry() = default;
  virtual Entry attention(const std::string& name, Knob knob, AttentionFn fn,
                          const std::string& description) = 0;
  virtual Entry activation(const std::string& name, Knob knob, ActivationFn fn,
                           const std::string& description) = 0;
  virtual Entry layer_norm(const std::string& name, Knob knob, LayerNormFn fn,
                           const std::string& description) = 0;
  virtual Entry optimizer(const std::string& name, Knob knob, OptimizerFn fn,
                          const std::string& description) = 0;
  virtual Entry loss(const std::string& name, Knob knob, LossFn fn,
                     const std::string& description) = 0;
  virtual void restrict_devices(int entry_id, std::vector<std::string> devices) = 0;
};

inline Entry& Entry::devices(std::vector<std::string> allowed) {
  r_->restrict_devices(id_, std::move(allowed));
  return *this;
}

}  // namespace lockstep::plugin

// What the loader reads before it calls lockstep_plugin_init: the interface version and the
// LibTorch version this plugin was compiled against (defined here, once per plugin).
extern "C" {
__attribute__((visibility("default"), used)) inline int lockstep_plugin_abi() {
  return LOCKSTEP_PLUGIN_ABI;
}
__attribute__((visibility("default"), used)) inline const char* lockstep_plugin_torch_version() {
  return TORCH_VERSION;
}
}

// The entry point every plugin defines.
extern "C" __attribute__((visibility("default"))) void lockstep_plugin_init(
    lockstep::plugin::Registry& r);
