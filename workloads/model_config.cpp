#include "workloads/model_config.h"

#include <array>

#include "harness/registry/catalog.h"

namespace lockstep::workloads {
namespace {

struct Preset {
  const char* name;
  int64_t d_model, n_layers, n_heads, seq_len, vocab_size;
};
// tiny: the CPU demo, sized so bf16's GEMM speed-up is visible on an AVX512-BF16 core.
// small: a CPU benchmark size. gpt2-124m: GPT-2 small (vocab padded to 50304), for GPUs.
constexpr std::array<Preset, 3> kPresets{{
    {"tiny", 128, 2, 4, 64, 512},
    {"small", 256, 4, 8, 128, 2048},
    {"gpt2-124m", 768, 12, 12, 1024, 50304},
}};

void finalize_model(config::Config& c) {
  const std::string& p = c.str("model.preset");
  const Preset* preset = nullptr;
  for (const auto& q : kPresets)
    if (p == q.name) preset = &q;
  const bool heads_explicit = c.is_set("model.n_heads"), width_explicit = c.is_set("model.d_model");
  auto fill = [&](const char* key, int64_t v) {
    if (!c.is_set(key)) c.resolve(key, v, "model.preset");
  };
  fill("model.d_model", preset->d_model);
  fill("model.n_layers", preset->n_layers);
  fill("model.n_heads", preset->n_heads);
  fill("model.seq_len", preset->seq_len);
  fill("model.vocab_size", preset->vocab_size);
  const int64_t d = c.integer("model.d_model"), h = c.integer("model.n_heads");
  // Point at the key the user wrote: n_heads, or d_model when n_heads came from the preset.
  if (d % h != 0)
    c.fail(heads_explicit || !width_explicit ? "model.n_heads" : "model.d_model",
           "n_heads = " + std::to_string(h) + " does not divide d_model = " + std::to_string(d));
}

}  // namespace

const config::SectionSchema& model_schema() {
  using config::KeySpec;
  static const config::SectionSchema s{
      "model",
      "The reference GPT-2-style decoder (workloads/gpt.h).",
      {
          KeySpec::Str("preset", "tiny", "shape preset; the keys below override it")
              .one_of({"tiny", "small", "gpt2-124m"}),
          KeySpec::Int("d_model", std::nullopt, "embedding width C").range(8, 16384),
          KeySpec::Int("n_layers", std::nullopt, "transformer blocks L").range(1, 256),
          KeySpec::Int("n_heads", std::nullopt, "attention heads H (must divide d_model)")
              .range(1, 256),
          KeySpec::Int("seq_len", std::nullopt, "context length T").range(2, 65536),
          KeySpec::Int("vocab_size", std::nullopt, "vocabulary V").range(2, 1048576),
          registry::impl_key(registry::Slot::Activation, "activation", "gelu",
                             "the MLP's expansion and activation: gelu (exact erf GELU) | a "
                             "plugin's (`lockstep variants`)"),
          registry::impl_key(registry::Slot::LayerNorm, "layer_norm", "layer_norm",
                             "LayerNorm kernel: layer_norm (LibTorch's) | a plugin's"),
          registry::impl_key(registry::Slot::Loss, "loss", "cross_entropy",
                             "training loss kernel: cross_entropy (LibTorch's, on fp32 logits) | "
                             "a plugin's"),
      },
      finalize_model,
  };
  return s;
}

ModelConfig ModelConfig::from(const config::Config& c) {
  ModelConfig m;
  m.preset = c.str("model.preset");
  m.d_model = c.integer("model.d_model");
  m.n_layers = c.integer("model.n_layers");
  m.n_heads = c.integer("model.n_heads");
  m.seq_len = c.integer("model.seq_len");
  m.vocab_size = c.integer("model.vocab_size");
  m.activation = c.str("model.activation");
  m.layer_norm = c.str("model.layer_norm");
  m.loss = c.str("model.loss");
  return m;
}

int64_t ModelConfig::parameter_count() const {
  const int64_t C = d_model;
  const int64_t per_block = 2 * 2 * C              // ln_1, ln_2 (weight + bias)
                            + (C * 3 * C + 3 * C)  // attn qkv
                            + (C * C + C)          // attn proj
                            + (C * 4 * C + 4 * C)  // mlp fc
                            + (4 * C * C + C);     // mlp proj
  return vocab_size * C + seq_len * C + n_layers * per_block + 2 * C;
}

double ModelConfig::flops_per_token() const {
  const double N = static_cast<double>(parameter_count() - seq_len * d_model);
  return 6.0 * N + 12.0 * static_cast<double>(n_layers) * static_cast<double>(n_heads) *
                       static_cast<double>(head_dim()) * static_cast<double>(seq_len);
}

}  // namespace lockstep::workloads
