// Lockstep's own implementations, registered through the same interface a plugin uses
// (include/lockstep/plugin.h). Each is the reference the plugins are judged against.
#include "harness/compat/autocast_weight.h"
#include "harness/kernels/kernel_table.h"
#include "variants/adamw.h"
#include "variants/attention.h"

namespace lockstep::registry {

void register_builtins() {
  using plugin::Knob;
  StagingRegistry r("");
  r.attention("math", Knob::Exact, variants::math_attention,
              "softmax(q k^T / sqrt(hd) + causal mask) v, mask and scale folded into one baddbmm");
  r.attention("fused", Knob::Exact, variants::fused_attention,
              "LibTorch's scaled-dot-product attention (flash / memory-efficient on CUDA 2.x)");
  r.activation(
      "gelu", Knob::Exact,
      [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
        // Exact (erf) GELU, as nanoGPT: on CPU LibTorch it is 3x (fp32) to 15x (bf16) faster than
        // the tanh approximation (bench/RESULTS.md). linear() on (N, C) puts the bias into the
        // GEMM (addmm). Under autocast the weights come as the model's other GEMMs take theirs
        // (compat::autocast_weight: the step's copy, else autocast's cache); the same values.
        return torch::gelu(torch::linear(x, compat::autocast_weight(w),
                                         compat::autocast_weight(b)));  // (N, 4C)
      },
      "exact (erf) GELU of LibTorch's linear: addmm with the bias, then gelu");
  r.layer_norm(
      "layer_norm", Knob::Exact,
      [](const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b, double eps) {
        return torch::layer_norm(x, {x.size(-1)}, w, b, eps);
      },
      "LibTorch's layer_norm (fp32 under CPU autocast)");
  r.loss(
      "cross_entropy", Knob::Exact,
      [](const torch::Tensor& logits, const torch::Tensor& targets) {
        return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), targets);
      },
      "LibTorch's cross_entropy (log_softmax + nll_loss) on the logits cast to fp32");
  r.optimizer(
      "adamw", Knob::Exact, variants::adamw_update,
      "AdamW in one fused pass over each flat fp32 buffer on CPU (tensor ops elsewhere)");
  r.optimizer("fused", Knob::Approximate, variants::fused_adamw_update,
              "LibTorch's fused AdamW kernel (at::_fused_adamw_, LibTorch 2.1 and later): the "
              "masked weight decay, then one kernel for the update")
      .devices({"cuda"});
  r.commit();
}

}  // namespace lockstep::registry
