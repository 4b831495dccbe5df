// [model]: the reference transformer's shape. Owned by the workload (workloads/gpt.h).
#pragma once

#include <cstdint>
#include <string>

#include "harness/config/config.h"

namespace lockstep::workloads {

struct ModelConfig {
  std::string preset;
  int64_t d_model = 0, n_layers = 0, n_heads = 0, seq_len = 0, vocab_size = 0;
  // Implementations by registered name (harness/registry): the math is the same for every one.
  std::string activation, layer_norm, loss;

  int64_t head_dim() const { return d_model / n_heads; }
  // Parameters of the model as built (tied embedding counted once, position embedding included).
  int64_t parameter_count() const;
  // Training FLOPs per token, PaLM appendix B: 6*N + 12*L*H*Q*T with N = all parameters except
  // the position embedding (the tied token embedding counted once, as the output GEMM).
  double flops_per_token() const;

  static ModelConfig from(const config::Config& cfg);
};

const config::SectionSchema& model_schema();

}  // namespace lockstep::workloads
