// The step's hooks (harness/train/hook/step_hook.h), one per concern beside the step:
//   TurnHook       a compare timing pair's runs take turns step by step (harness/vocab/step_turn.h)
//   FaultInjector  [faults]: deliberate faults at named points (harness/train/faults/faults.h)
//   ProfileHook    [profile]: the operator/layer window, NVTX ranges, the Chrome trace
//                  (harness/train/profile/)
// The trainer adds them in this order (then TrainOptions::hooks); how the step runs (eagerly or
// as CUDA graphs) is not a hook: harness/train/micro_step.h.
#pragma once

#include <chrono>
#include <memory>

#include "harness/train/hook/step_hook.h"
#include "harness/train/model_builder.h"
#include "harness/train/profile/nvtx_layers.h"
#include "harness/train/profile/profile_window.h"
#include "harness/train/profile/trace.h"
#include "harness/train/progress.h"
#include "harness/vocab/step_turn.h"

namespace lockstep::train {

// A single-process timing run of a compare pair takes turns with its peer: it waits for the turn
// before the step's clock starts and hands it over after the step (and its checkpoint). A peer
// that does not answer within `give_up_s` is left behind. Inactive without LOCKSTEP_TURN_FD.
class TurnHook final : public StepHook {
 public:
  TurnHook(StepTurn turn, Progress& progress) : turn_(std::move(turn)), progress_(progress) {}
  void before_step(int64_t step, StepRecord& rec) override;
  // (Checkpoint, End): the step, its observers and its checkpoint are done: the peer's turn.
  void on_phase(Phase phase, Edge edge, StepView& view) override;
  void finish(TrainOutcome& out) override;

 private:
  StepTurn turn_;
  Progress& progress_;
};

// The profile window's steps are never timed (also when a resume lands inside the window and the
// profiler never starts); with [profile] nvtx, an NVTX range per step and per phase; with
// [profile] trace, the step's phases as spans.
class ProfileHook final : public StepHook {
 public:
  explicit ProfileHook(RankModel& m);
  void before_step(int64_t step, StepRecord& rec) override;
  StepNeeds needs(int64_t step) const override;
  void on_phase(Phase phase, Edge edge, StepView& view) override;
  void after_step(int64_t step, const PhaseTimer& timer, const StepRecord& rec) override;
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

}  // namespace lockstep::train
