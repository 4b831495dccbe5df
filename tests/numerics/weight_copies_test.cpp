// The step's low-precision weight copies (variants/weight_copies.h) against autocast's own casts
// on the same model and batches: the losses and every parameter's gradient are the same bits, at
// one and at two micro-batches per step and at ZeRO stages 0-2 (one rank), the blocks' weights do
// come from the copies, and a copy follows its weight across an update. On CUDA:
// cuda_path_test.cpp Cuda.WeightCopies*.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/compat/autocast_weight.h"
#include "weight_copies_step.h"

namespace lockstep {
namespace {

using lockstep::testing::bf16_model;
using lockstep::testing::copies_step;

TEST(WeightCopies, SameLossesAndGradientsBitForBitAsAutocastsCasts) {
  for (const int64_t zero_stage : {0, 1, 2}) {
    for (const int64_t A : {1, 2}) {
      SCOPED_TRACE("zero_stage " + std::to_string(zero_stage) + ", micro-batches " +
                   std::to_string(A));
      auto m = bf16_model("cpu", zero_stage);
      ASSERT_NE(m->weight_copies, nullptr);
      const auto cast = copies_step(*m, A, false);
      const auto copied = copies_step(*m, A, true);
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
  auto m = bf16_model("cpu", 0);
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

  copies_step(*m, 1, true);
  m->sharding->step(1e-2, 1);  // the update moves the weights
  const auto [moved, unused] = in_window(true);
  EXPECT_FALSE(torch::equal(moved, before));
  EXPECT_TRUE(torch::equal(moved, w.detach().to(torch::kBFloat16)));
}

}  // namespace
}  // namespace lockstep
