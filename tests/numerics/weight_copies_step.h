// A bf16 model built as the trainer builds it (with its step's weight copies) and one step of its
// micro-batches run as Trainer::run_steps runs them, with or without the copies: what
// weight_copies_test.cpp (CPU) and cuda_path_test.cpp (CUDA) compare.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/train/model_builder.h"

namespace lockstep::testing {

inline std::unique_ptr<train::RankModel> bf16_model(const std::string& device, int64_t zero_stage) {
  registry::install();
  const auto cfg = config::Config::load(
      std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml",
      {"precision.compute=bf16", "data.batch_size=2", "run.device=" + device,
       "parallel.zero_stage=" + std::to_string(zero_stage)});
  train::BuildOptions trained;
  trained.trains = true;
  return train::build_rank_model(cfg, dist::RankInfo{}, trained);
}

struct CopiesStep {
  std::vector<double> losses;
  std::vector<torch::Tensor> grads;  // every parameter's, unit_parameters() order
};

// One step's A micro-batches (gradients zeroed, the casts kept across the micro-batches, each
// backward of loss / A), with or without the copies.
inline CopiesStep copies_step(train::RankModel& m, int64_t A, bool copies) {
  CopiesStep out;
  m.sharding->begin_step();
  {
    const auto casts = m.precision->step_casts(A > 1);
    const variants::WeightCopies::Window window(copies ? m.weight_copies.get() : nullptr);
    for (int64_t micro = 0; micro < A; ++micro) {
      const auto b = m.to_device(m.host_tokens(1, micro), nullptr);  // x, y: (B, T)
      const auto l = m.model_loss(b.x, b.y);
      (l.train / static_cast<double>(A)).backward();
      out.losses.push_back(l.reported.item<double>());
    }
  }
  m.sharding->end_backward(true);
  for (auto& g : m.sharding->full_grads()) out.grads.push_back(g.clone());
  return out;
}

}  // namespace lockstep::testing
