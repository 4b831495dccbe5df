// The step's low-precision weight copies (variants/weight_copies.h) against autocast's own casts
// on the same model and batches: the losses and every parameter's gradient are the same bits, at
// one and at two micro-batches per step and at ZeRO stages 0-2 (one rank), the blocks' weights do
// come from the copies, and a copy follows its weight across an update.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/compat/autocast_weight.h"
#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/train/model_builder.h"

namespace lockstep {
namespace {

std::unique_ptr<train::RankModel> bf16_model(int64_t zero_stage) {
  registry::install();
  const auto cfg = config::Config::load(
      std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml",
      {"precision.compute=bf16", "data.batch_size=2",
       "parallel.zero_stage=" + std::to_string(zero_stage)});
  train::BuildOptions trained;
  trained.trains = true;
  return train::build_rank_model(cfg, dist::RankInfo{}, trained);
}

struct Step {
  std::vector<double> losses;
  std::vector<torch::Tensor> grads;  // every parameter's, unit_parameters() order
};

// One step's micro-batches as Trainer::run_steps runs them (gradients zeroed, the casts kept
// across the micro-batches, each backward of loss / A), with or without the copies.
Step step(train::RankModel& m, int64_t A, bool copies) {
  Step out;
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

TEST(WeightCopies, SameLossesAndGradientsBitForBitAsAutocastsCasts) {
  for (const int64_t zero_stage : {0, 1, 2}) {
    for (const int64_t A : {1, 2}) {
      SCOPED_TRACE("zero_stage " + std::to_string(zero_stage) + ", micro-batches " +
                   std::to_string(A));
      auto m = bf16_model(zero_stage);
      ASSERT_NE(m->weight_copies, nullptr);
      const Step cast = step(*m, A, false);
      const Step copied = step(*m, A, true);
      EXPECT_EQ(copied.losses, cast.losses);
      ASSERT_EQ(copied.grads.size(), cast.grads.size());
      int64_t nonzero = 0;
      for (size_t i = 0; i < cast.grads.size(); ++i) {
        EXPECT_TRUE(torch::equal(copied.grads[i], cast.grads[i])) << "parameter " << i;
        nonzero += cast.grads[i].abs().sum().item<double>() > 0;
      }
      EXPECT_EQ(nonzero, static_cast<int64_t>(cast.grads.size()));  // every gradient is real
    }
  }
}

// Inside the window a block's GEMM weight is its unit's copy (its gradient edge is the copy's),
// equal to the weight cast to bf16; outside it autocast casts; after an update the next window's
// copy is the updated weight's.
TEST(WeightCopies, BlocksWeightsComeFromTheCopiesAndFollowTheUpdate) {
  auto m = bf16_model(0);
  ASSERT_NE(m->weight_copies, nullptr);
  torch::Tensor w, wte;
  for (const auto& p : m->model->named_parameters()) {
    if (p.key() == "h.0.attn.c_attn.weight") w = p.value();
    if (p.key() == "wte.weight") wte = p.value();
  }
  ASSERT_TRUE(w.defined() && wte.defined());
  auto in_window = [&](bool copies) {
    const variants::WeightCopies::Window window(copies ? m->weight_copies.get() : nullptr);
    const auto scope = m->precision->forward_scope();
    return std::make_pair(compat::autocast_weight(w), compat::autocast_weight(wte));
  };
  const auto [copy, tied] = in_window(true);
  const auto before = copy.detach().clone();
  ASSERT_NE(copy.grad_fn(), nullptr);
  EXPECT_EQ(copy.grad_fn()->name(), "lockstep::AddToGrad");
  EXPECT_EQ(copy.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(copy, w.detach().to(torch::kBFloat16)));
  EXPECT_NE(tied.grad_fn()->name(), "lockstep::AddToGrad");  // the tied embedding: autocast's
  EXPECT_NE(in_window(false).first.grad_fn()->name(), "lockstep::AddToGrad");

  step(*m, 1, true);
  m->sharding->step(1e-2, 1);  // the update moves the weights
  const auto [moved, unused] = in_window(true);
  EXPECT_FALSE(torch::equal(moved, before));
  EXPECT_TRUE(torch::equal(moved, w.detach().to(torch::kBFloat16)));
}

}  // namespace
}  // namespace lockstep
