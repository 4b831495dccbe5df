// The step's hook points (harness/train/hook/step_hook.h) on a real Trainer: their order within a
// step is pinned (Begin edges in the order the hooks were added, End edges in reverse), what a hook
// may read at each edge is there, and the step's time is decided in one place from the hooks'
// answers.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/train/hook/step_hook.h"
#include "harness/train/trainer.h"
#include "variants/sharding.h"

namespace lockstep {
namespace {

using train::StepHook;
using train::StepNeeds;
using train::StepView;

// Writes every call into a shared log as "<name>:<point>".
class Recorder final : public StepHook {
 public:
  Recorder(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  int64_t untimed_step = -1;
  std::vector<std::string> seen;  // what the view held at the edges that promise something

  void before_step(int64_t step, StepRecord& rec) override {
    say("before_step " + std::to_string(step) + (rec.lr > 0 ? " lr" : " no-lr"));
  }
  StepNeeds needs(int64_t step) const override {
    const_cast<Recorder*>(this)->say("needs " + std::to_string(step));
    return StepNeeds{false, step == untimed_step};
  }
  void on_phase(Phase phase, Edge edge, StepView& v) override {
    const bool begin = edge == Edge::Begin;
    say(std::string(phase_name(phase)) + (begin ? " begin" : " end") + " m" +
        std::to_string(v.micro));
    std::ostringstream what;
    if (phase == Phase::Data && !begin) what << "tokens " << v.tokens.sizes();
    if (phase == Phase::Forward && !begin)
      what << "losses " << (v.reported && v.train && v.reported->numel() == 1);
    if ((phase == Phase::Optimizer || phase == Phase::Forward) && begin)
      what << "sharding " << (v.sharding != nullptr);
    if (!what.str().empty()) seen.push_back(what.str());
  }
  void after_step(int64_t step, const train::PhaseTimer&, const StepRecord& rec) override {
    say("after_step " + std::to_string(step) + (rec.step_ms > 0 ? " closed" : " open"));
  }
  void finish(train::TrainOutcome&) override { say("finish"); }

 private:
  void say(const std::string& what) { log_.push_back(name_ + ":" + what); }
  std::string name_;
  std::vector<std::string>& log_;
};

class Steps final : public train::StepObserver {
 public:
  void on_step(const StepRecord& r) override { records.push_back(r); }
  std::vector<StepRecord> records;
};

config::Config tiny(int64_t steps, int64_t accum) {
  registry::install();  // the built-in kernels, as the binary
  return config::Config::load(
      std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml",
      {"run.steps=" + std::to_string(steps), "run.warmup_steps=1",
       "data.grad_accum=" + std::to_string(accum), "data.batch_size=2", "profile.window=0"});
}

TEST(StepHooks, OrderWithinAStepIsPinned) {
  std::vector<std::string> log;
  auto a = std::make_shared<Recorder>("a", log);
  auto b = std::make_shared<Recorder>("b", log);
  train::TrainOptions opts;
  opts.hooks = {a, b};
  train::Trainer trainer(tiny(2, 2), dist::RankInfo{}, opts);
  Steps steps;
  const auto out = trainer.run(steps);
  ASSERT_EQ(out.status, RunStatus::Ok) << out.failure;
  ASSERT_EQ(steps.records.size(), 2u);

  // One step with two micro-batches: data, forward, backward, comm per micro-batch, then the
  // optimizer, the rest of the step, the closed record, then the observers and checkpoint.
  std::vector<std::string> step1 = {"a:before_step 1 lr", "b:before_step 1 lr", "a:needs 1",
                                    "b:needs 1"};
  auto phase = [&](const std::string& p, int micro) {
    const std::string m = " m" + std::to_string(micro);
    for (const auto* e : {"a:", "b:"}) step1.push_back(e + p + " begin" + m);
    for (const auto* e : {"b:", "a:"}) step1.push_back(e + p + " end" + m);
  };
  for (int micro = 0; micro < 2; ++micro)
    for (const auto* p : {"data", "forward", "backward", "comm"}) phase(p, micro);
  phase("optimizer", 2);
  phase("other", 2);
  step1.push_back("a:after_step 1 closed");
  step1.push_back("b:after_step 1 closed");
  phase("checkpoint", 2);
  ASSERT_GE(log.size(), 2 * step1.size() + 2);
  EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + step1.size()), step1);
  // Step 2 repeats it; then finish, once per hook, in order.
  EXPECT_EQ(log[step1.size()], "a:before_step 2 lr");
  EXPECT_EQ(log.size(), 2 * step1.size() + 2);
  EXPECT_EQ(log[log.size() - 2], "a:finish");
  EXPECT_EQ(log.back(), "b:finish");

  // What the edges promise: the host tokens (B, T+1) at the data's end, the losses at the
  // forward's end, the sharding at the forward's and the optimizer's begin.
  const int64_t T = steps.records[0].tokens / (2 * 2);  // batch 2 x 2 micro-batches x T
  std::ostringstream tokens;
  tokens << "tokens [2, " << T + 1 << "]";
  const std::vector<std::string> per_micro = {tokens.str(), "sharding 1", "losses 1"};
  std::vector<std::string> want;
  for (int s = 0; s < 2; ++s) {
    for (int micro = 0; micro < 2; ++micro)
      want.insert(want.end(), per_micro.begin(), per_micro.end());
    want.push_back("sharding 1");
  }
  EXPECT_EQ(a->seen, want);
}

TEST(StepHooks, AHookThatUntimesAStepIsTheOnlyReasonBesidesWarmup) {
  std::vector<std::string> log;
  auto a = std::make_shared<Recorder>("a", log);
  a->untimed_step = 3;
  train::TrainOptions opts;
  opts.hooks = {a};
  train::Trainer trainer(tiny(4, 1), dist::RankInfo{}, opts);
  Steps steps;
  ASSERT_EQ(trainer.run(steps).status, RunStatus::Ok);
  ASSERT_EQ(steps.records.size(), 4u);
  // warmup_steps = 1: step 1 is warm-up; step 3 is untimed by the hook; 2 and 4 are timed.
  EXPECT_FALSE(steps.records[0].timed);
  EXPECT_TRUE(steps.records[1].timed);
  EXPECT_FALSE(steps.records[2].timed);
  EXPECT_TRUE(steps.records[3].timed);
}

}  // namespace
}  // namespace lockstep
