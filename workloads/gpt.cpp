#include "workloads/gpt.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "harness/compat/autocast_weight.h"

namespace lockstep::workloads {
namespace {

// A Linear over the last dim of (..., in) as one addmm on (N, in): LibTorch 1.13's Linear on 3-D
// input runs a matmul and then the bias add as a pass of its own (under autocast with a cast of
// the bias on top); on 2-D input the bias is the GEMM's accumulator. 2.x flattens the same way.
// Under autocast the weight and bias come from compat::autocast_weight: in a training step the
// block's one copy (variants/weight_copies.h), elsewhere autocast's cache; one cast per step, not
// one per micro-batch, and the same values in the same layout reach the GEMM.
torch::Tensor linear(torch::nn::Linear& lin, const torch::Tensor& x) {
  auto sizes = x.sizes().vec();
  auto y = torch::nn::functional::linear(x.view({-1, sizes.back()}),
                                         compat::autocast_weight(lin->weight),
                                         compat::autocast_weight(lin->bias));  // (N, out)
  sizes.back() = y.size(1);
  return y.view(sizes);
}

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& cfg, AttentionKernel kernel)
    : n_heads_(cfg.n_heads), kernel_(std::move(kernel)) {
  c_attn = register_module("c_attn", torch::nn::Linear(cfg.d_model, 3 * cfg.d_model));
  c_proj = register_module("c_proj", torch::nn::Linear(cfg.d_model, cfg.d_model));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / n_heads_;
  auto qkv = linear(c_attn, x);  // (B, T, 3*C)
  // One copy puts q, k and v head-major, (3, B, H, T, hd): each is then a contiguous block that
  // the attention GEMMs read in place (separate transposes cost a copy each, forward and back).
  auto heads = qkv.view({B, T, 3, n_heads_, hd}).permute({2, 0, 3, 1, 4}).contiguous();
  auto qkv_heads = heads.unbind(0);  // 3 x (B, H, T, hd); backward stacks the three gradients
  const auto &q = qkv_heads[0], &k = qkv_heads[1], &v = qkv_heads[2];
  auto y = kernel_(q, k, v);                           // (B, H, T, hd)
  y = y.transpose(1, 2).contiguous().view({B, T, C});  // (B, T, C)
  return linear(c_proj, y);                            // (B, T, C)
}

MLPImpl::MLPImpl(const ModelConfig& cfg, ActivationKernel activation)
    : activation_(std::move(activation)) {
  c_fc = register_module("c_fc", torch::nn::Linear(cfg.d_model, 4 * cfg.d_model));
  c_proj = register_module("c_proj", torch::nn::Linear(4 * cfg.d_model, cfg.d_model));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  // GELU(x W_fc^T + b_fc) by the activation kernel (the built-in: exact erf GELU, as nanoGPT).
  const int64_t C = x.size(-1);
  auto h = activation_(x.view({-1, C}), c_fc->weight, c_fc->bias);  // (B*T, 4*C)
  return linear(c_proj, h).view(x.sizes());                         // (B, T, C)
}

BlockImpl::BlockImpl(const ModelConfig& cfg, const ModelKernels& kernels)
    : layer_norm_(kernels.layer_norm) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  attn = register_module("attn", CausalSelfAttention(cfg, kernels.attention));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  mlp = register_module("mlp", MLP(cfg, kernels.activation));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  const double eps = ln_1->options.eps();
  auto y = x + attn(layer_norm_(x, ln_1->weight, ln_1->bias, eps));  // (B, T, C)
  return y + mlp(layer_norm_(y, ln_2->weight, ln_2->bias, eps));     // (B, T, C)
}

GPTImpl::GPTImpl(const ModelConfig& cfg, ModelKernels kernels)
    : cfg_(cfg), kernels_(std::move(kernels)) {
  wte = register_module("wte", torch::nn::Embedding(cfg.vocab_size, cfg.d_model));
  wpe = register_module("wpe", torch::nn::Embedding(cfg.seq_len, cfg.d_model));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.n_layers; ++i) {
    blocks_.push_back(Block(cfg, kernels_));
    h->push_back(blocks_.back());
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.d_model})));
  init_weights();
}

void GPTImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(cfg_.n_layers));
  // Fixed order (registration order) so the same seed gives the same weights everywhere.
  for (auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool is_weight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
    if (name.find("ln_") != std::string::npos) {
      is_weight ? p.fill_(1.0) : p.zero_();
    } else if (!is_weight) {
      p.zero_();  // Linear biases
    } else if (name.find("c_proj.weight") != std::string::npos) {
      p.normal_(0.0, proj_std);  // residual projections
    } else {
      p.normal_(0.0, 0.02);
    }
  }
}

std::vector<std::vector<torch::Tensor>> GPTImpl::unit_parameters() {
  std::vector<std::vector<torch::Tensor>> units;
  units.push_back({wte->weight, wpe->weight, ln_f->weight, ln_f->bias});
  for (auto& b : blocks_) units.push_back(b->parameters(/*recurse=*/true));
  return units;
}

void GPTImpl::remove_hooks(UnitHooks* hooks) {
  hooks_.erase(std::remove(hooks_.begin(), hooks_.end(), hooks), hooks_.end());
}

namespace {

// (T) positions 0..T-1, built once per length and device (thread-local: serving's lanes run
// forwards at once); an inference-mode tensor cannot be saved for a backward, so by mode too.
const torch::Tensor& positions(int64_t T, const torch::TensorOptions& opts) {
  thread_local std::map<std::tuple<int64_t, std::string, bool>, torch::Tensor> cache;
  auto& p = cache[{T, opts.device().str(), c10::InferenceMode::is_enabled()}];
  if (!p.defined()) p = torch::arange(T, opts);
  return p;
}

}  // namespace

torch::Tensor GPTImpl::forward(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  for (auto* h : hooks_) h->before_forward(0);
  const auto& pos = positions(T, idx.options());  // (T)
  auto x = wte(idx) + wpe(pos);                     // (B, T, C)
  for (auto* h : hooks_) h->after_embedding(x);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const int unit = static_cast<int>(i) + 1;
    for (auto* h : hooks_) h->before_forward(unit);
    x = blocks_[i]->forward(x);  // (B, T, C)
    for (auto* h : hooks_) h->after_forward(unit, x);
  }
  x = kernels_.layer_norm(x, ln_f->weight, ln_f->bias, ln_f->options.eps());  // (B, T, C)
  auto logits = torch::matmul(x, compat::autocast_weight(wte->weight).t());  // (B, T, V), tied
  for (auto* h : hooks_) h->after_forward(0, logits);
  return logits;
}

}  // namespace lockstep::workloads
