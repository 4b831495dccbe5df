// The host-work counter (harness/train/profile/host_work.h) on a real Trainer: what it counts is
// the step's own dispatch (the GEMMs it must run, the reads after the step), counted steps are
// untimed, and counting does not touch the math.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/train/profile/host_work.h"
#include "harness/train/trainer.h"

namespace lockstep {
namespace {

class Steps final : public train::StepObserver {
 public:
  void on_step(const StepRecord& r) override { records.push_back(r); }
  std::vector<StepRecord> records;
};

config::Config tiny(const std::string& compute, int64_t accum) {
  registry::install();
  return config::Config::load(std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml",
                              {"run.steps=5", "run.warmup_steps=1", "data.batch_size=2",
                               "data.grad_accum=" + std::to_string(accum),
                               "precision.compute=" + compute, "profile.window=0"});
}

struct Counted {
  train::HostWork work;
  std::vector<StepRecord> records;
};

Counted run(const config::Config& cfg, bool count) {
  train::TrainOptions opts;
  auto hook = std::make_shared<train::HostWorkHook>(3, 4);
  if (count) opts.hooks = {hook};
  train::Trainer trainer(cfg, dist::RankInfo{}, opts);
  Steps steps;
  const auto out = trainer.run(steps);
  EXPECT_EQ(out.status, RunStatus::Ok) << out.failure;
  return {hook->counted(), steps.records};
}

int64_t in(const train::HostWork& w, const std::string& op, Phase p) {
  const auto it = w.ops.find(op);
  return it == w.ops.end() ? 0 : it->second[static_cast<int>(p)];
}

TEST(HostWork, TheStepsOnlyHostSyncsAreTheTwoReadsAfterIt) {
  for (const auto& [compute, accum] :
       std::vector<std::pair<std::string, int64_t>>{{"fp32", 1}, {"fp32", 2}, {"bf16", 2}}) {
    SCOPED_TRACE(compute + " grad_accum " + std::to_string(accum));
    const auto c = run(tiny(compute, accum), true);
    ASSERT_EQ(c.work.steps, 2);
    EXPECT_EQ(c.work.syncs_inside_step(), 0);
    // The loss and the gradient norm, read once per step after the update: 2 per step.
    EXPECT_EQ(c.work.total_syncs(), 2 * 2);
    EXPECT_EQ(c.work.syncs_in[static_cast<int>(Phase::Other)], 2 * 2);
  }
}

// The trainer's own fills (gradients zeroed, the loss's seed gradient) against the fills inside
// an autograd node's formula (LibTorch's CPU sum initializes its output with fill_: one per bias
// gradient; not the trainer's to cut, and a CUDA sum does not do it).
int64_t fills_outside_autograd_nodes(const train::HostWork& w) {
  int64_t n = 0;
  for (const auto& [root, calls] : w.roots.at("aten::fill_"))
    if (root.rfind("autograd::engine::evaluate_function", 0) != 0) n += calls;
  return n;
}

// At one and at two micro-batches per step. (With grad_accum 2 each micro-batch's backward seeds
// its own gradient: one more fill per micro-batch; the weights are still cast once per step,
// Precision::StepCasts.)
TEST(HostWork, OneZeroingOfTheGradientsAndWeightsCastOncePerStep) {
  for (const auto& [compute, accum] : std::vector<std::pair<std::string, int64_t>>{
           {"fp32", 1}, {"bf16", 1}, {"fp32", 2}, {"bf16", 2}}) {
    SCOPED_TRACE(compute + " grad_accum " + std::to_string(accum));
    const auto c = run(tiny(compute, accum), true);
    ASSERT_EQ(c.work.steps, 2);
    // Per step: the flat gradient buffer's zero_, and each micro-batch's backward seed (ones_like).
    std::string callers;
    for (const auto& [root, calls] : c.work.roots.at("aten::fill_"))
      callers += root + " " + std::to_string(calls) + "; ";
    EXPECT_EQ(fills_outside_autograd_nodes(c.work), 2 * (1 + accum)) << callers;
    // tiny: 2 blocks of 4 Linear layers (weight and bias) and the tied wte are the GEMMs'
    // parameters. The blocks' come from one copy per block (variants/weight_copies.h): bf16
    // autocast casts only wte, once per step (its cache); nothing else is cast.
    const int64_t params = 4 + 12 * 2;
    EXPECT_EQ(c.work.total_weight_casts(), compute == "fp32" ? 0 : 2 * 1);
    EXPECT_LE(c.work.total_weight_casts() / 2, params);
  }
}

TEST(HostWork, CountsTheGemmsEachMicroBatchRunsInItsPhase) {
  const auto c = run(tiny("fp32", 2), true);
  // tiny: 2 blocks x 4 Linear layers (c_attn, attention c_proj, c_fc, MLP c_proj), each one
  // addmm on (B*T, in) with its bias as the accumulator, in the forward, per micro-batch (2) and
  // counted step (2); the head is a matmul. (LibTorch's CPU baddbmm runs addmm_ per head inside
  // the attention: not counted here.)
  EXPECT_EQ(in(c.work, "aten::addmm", Phase::Forward), 2 * 4 * 2 * 2);
  EXPECT_EQ(c.work.calls("aten::addmm"), 2 * 4 * 2 * 2);
  EXPECT_EQ(c.work.roots.at("aten::baddbmm").at("lockstep::attention"), 2 * 2 * 2);
  // Each counted step allocates in its forward and backward; the optimizer's phase dispatches.
  EXPECT_GT(c.work.allocs_in[static_cast<int>(Phase::Forward)], 0);
  EXPECT_GT(c.work.allocs_in[static_cast<int>(Phase::Backward)], 0);
  EXPECT_GT(c.work.ops_in[static_cast<int>(Phase::Optimizer)], 0);
  EXPECT_EQ(c.work.ops_in[static_cast<int>(Phase::Checkpoint)], 0);  // after the step: not counted
}

TEST(HostWork, CountedStepsAreUntimedAndTheMathIsUnchanged) {
  const auto plain = run(tiny("fp32", 1), false);
  const auto counted = run(tiny("fp32", 1), true);
  ASSERT_EQ(plain.records.size(), 5u);
  ASSERT_EQ(counted.records.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(plain.records[i].loss, counted.records[i].loss) << "step " << i + 1;
    EXPECT_EQ(plain.records[i].grad_norm, counted.records[i].grad_norm) << "step " << i + 1;
    // warm-up is step 1; the hook counts (and untimes) steps 3 and 4.
    EXPECT_EQ(counted.records[i].timed, i != 0 && i != 2 && i != 3) << "step " << i + 1;
  }
}

}  // namespace
}  // namespace lockstep
