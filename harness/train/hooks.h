// The step's hooks (harness/train/step_hook.h), one per concern beside the step:
//   TurnHook     a compare timing pair's runs take turns step by step (harness/vocab/step_turn.h)
//   FaultHook    [faults]: deliberate faults at named points (harness/train/faults/faults.h)
//   ProfileHook  [profile]: the operator/layer window, NVTX ranges, the Chrome trace
//                (harness/train/profile/)
//   GraphHook    [run] cuda_graphs: the step's forward and backward replayed as CUDA graphs
// The trainer adds them in this order; each is called at the same point in that order.
#pragma once

#include <chrono>
#include <memory>

#include "harness/train/model_builder.h"
#include "harness/train/profile/nvtx_layers.h"
#include "harness/train/profile/profile_window.h"
#include "harness/train/profile/trace.h"
#include "harness/train/step_graph.h"
#include "harness/train/step_hook.h"
#include "harness/train/trainer.h"
#include "harness/vocab/step_turn.h"

namespace lockstep::train {

// A single-process timing run of a compare pair takes turns with its peer: it waits for the turn
// before the step's clock starts and hands it over after the step (and its checkpoint). A peer
// that does not answer within `give_up_s` is left behind. Inactive without LOCKSTEP_TURN_FD.
class TurnHook final : public StepHook {
 public:
  TurnHook(StepTurn turn, Progress& progress) : turn_(std::move(turn)), progress_(progress) {}
  void before_step(int64_t step, StepRecord& rec) override;
  void after_step(int64_t step) override;
  void finish(TrainOutcome& out) override;

 private:
  StepTurn turn_;
  Progress& progress_;
};

class FaultHook final : public StepHook {
 public:
  FaultHook(const FaultInjector& faults, const Progress& progress)
      : faults_(faults), progress_(progress) {}
  void begin_step(int64_t step, StepRecord& rec) override;
  bool needs_eager(int64_t step) const override { return faults_.changes_loss(step); }
  void on_weights(int64_t step, variants::Sharding& params) override;
  void on_batch(int64_t step, int64_t* tokens, int64_t n) override;
  void on_loss(int64_t step, torch::Tensor& reported, torch::Tensor& train) override;
  void on_grads(int64_t step, variants::Sharding& grads) override;
  void before_read(int64_t step) override;
  std::string nonfinite_note(int64_t step) const override { return faults_.nonfinite_note(step); }

 private:
  const FaultInjector& faults_;
  const Progress& progress_;
};

// The profile window's steps are never timed (also when a resume lands inside the window and the
// profiler never starts); with [profile] nvtx, an NVTX range per step and per phase; with
// [profile] trace, the step's phases as spans.
class ProfileHook final : public StepHook {
 public:
  explicit ProfileHook(RankModel& m);
  void begin_step(int64_t step, StepRecord& rec) override;
  bool needs_eager(int64_t step) const override;
  void on_phase(const char* phase) override;
  void forward_begin() override { window_->forward_begin(); }
  void forward_end() override { window_->forward_end(); }
  void backward_begin() override { window_->backward_begin(); }
  void backward_end() override { window_->backward_end(); }
  void end_step(int64_t step, const PhaseTimer& timer, StepRecord& rec) override;
  void finish(TrainOutcome& out) override;

 private:
  void end_ranges();
  ProfileConfig prof_;
  int64_t warmup_steps_;
  std::shared_ptr<TraceLog> trace_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  std::unique_ptr<ProfileWindow> window_;
  std::unique_ptr<NvtxLayers> nvtx_layers_;
  std::unique_ptr<compat::NvtxRange> step_range_, phase_range_;
};

// [run] cuda_graphs replays the step's forward and backward from step 2 (shapes static, kernels
// and allocator warm), except where another hook needs the step eager (profiled and warm-up
// steps, faults.nonfinite_at). The capture step is never timed.
class GraphHook final : public StepHook {
 public:
  explicit GraphHook(const StepHook& all) : all_(all) {}
  void begin_step(int64_t step, StepRecord& rec) override;
  bool graphed() const { return graphed_; }
  // The captured forward (captured here first); its loss is a static tensor that the next replay
  // overwrites, so it is read before then.
  Losses forward(int64_t step, const Batch& b, RankModel& m, StepRecord& rec);
  void backward(double scale) { graph_.backward(scale); }

 private:
  const StepHook& all_;
  StepGraph graph_;
  bool graphed_ = false;
};

}  // namespace lockstep::train
