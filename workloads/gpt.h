// The reference workload: a GPT-2-style decoder-only transformer in LibTorch modules.
//
// Purpose: a small, fully deterministic model whose math every variant must reproduce. Token +
// learned position embeddings, n_layers pre-LayerNorm blocks (causal self-attention, GELU MLP
// with 4x expansion), a final LayerNorm, and an output projection tied to the token embedding.
// Init N(0, 0.02), residual projections scaled by 1/sqrt(2 * n_layers) (GPT-2).
//
// Constraints: no dropout (losses must be bitwise reproducible); no variant logic in here.
// Variants act from outside: the attention, activation and LayerNorm kernels are injected
// (harness/kernels: built-ins or a plugin's), precision
// wraps the forward (variants/precision.h), sharding uses the block hooks (variants/sharding.h)
// the way FSDP uses nn.Module hooks.
//
// Shapes: B batch, T sequence, C d_model, H heads, hd = C / H, V vocab.
#pragma once

#include <functional>

#include "harness/compat/torch_compat.h"
#include "workloads/model_config.h"

namespace lockstep::workloads {

// The kernels the model calls, chosen from outside (harness/kernels; signatures as in
// include/lockstep/plugin.h). The math is fixed; only the implementation varies.
// Causal attention over (B, H, T, hd) queries, keys and values -> (B, H, T, hd).
using AttentionKernel =
    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
// The MLP's expansion and GELU: x (N, C), weight (4C, C), bias (4C) -> gelu(x weight^T + bias).
using ActivationKernel =
    std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>;
// LayerNorm over the last dim: x (..., C), weight (C), bias (C), eps -> (..., C).
using LayerNormKernel = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&,
                                                    const torch::Tensor&, double)>;
struct ModelKernels {
  AttentionKernel attention;
  ActivationKernel activation;
  LayerNormKernel layer_norm;
};

// Observer of the model's units, in the spirit of nn.Module forward hooks. Unit 0 is the root
// (embeddings, final LayerNorm, tied head); units 1..L are the blocks.
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before_forward(int unit) { (void)unit; }
  // The embedding output (B, T, C), before block 0.
  virtual void after_embedding(torch::Tensor& x) { (void)x; }
  // `out` is the unit's output; a hook may register tensor hooks on it (pre-backward points).
  virtual void after_forward(int unit, torch::Tensor& out) { (void)unit, (void)out; }
};

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(const ModelConfig& cfg, AttentionKernel kernel);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};

 private:
  int64_t n_heads_;
  AttentionKernel kernel_;
};
TORCH_MODULE(CausalSelfAttention);

class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(const ModelConfig& cfg, ActivationKernel activation);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};

 private:
  ActivationKernel activation_;
};
TORCH_MODULE(MLP);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, const ModelKernels& kernels);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  MLP mlp{nullptr};

 private:
  LayerNormKernel layer_norm_;
};
TORCH_MODULE(Block);

class GPTImpl : public torch::nn::Module {
 public:
  GPTImpl(const ModelConfig& cfg, ModelKernels kernels);
  // (B, T) token ids -> (B, T, V) logits.
  torch::Tensor forward(const torch::Tensor& idx);

  // Parameters of each unit, in a fixed order: unit 0 = {wte, wpe, ln_f}, unit i = block i-1.
  std::vector<std::vector<torch::Tensor>> unit_parameters();
  // Observers of the units, called in the order added.
  void add_hooks(UnitHooks* hooks) { hooks_.push_back(hooks); }
  void remove_hooks(UnitHooks* hooks);
  const ModelConfig& config() const { return cfg_; }

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  void init_weights();
  ModelConfig cfg_;
  ModelKernels kernels_;
  std::vector<Block> blocks_;
  std::vector<UnitHooks*> hooks_;
};
TORCH_MODULE(GPT);

}  // namespace lockstep::workloads
