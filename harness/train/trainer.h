// The training loop of one rank: builds the reference model with the variants as layers
// (harness/train/model_builder.h), and runs the configured steps, timing each phase. What runs
// beside the step (the turn, faults, the profile window) is a list of hooks
// (harness/train/hook/step_hook.h, hooks.h); how a micro-batch runs (eagerly or as CUDA graphs) is
// the step's own strategy (harness/train/micro_step.h). It produces StepRecords and leaves all
// formatting to its observers (reporters, writers). The function probe is its own class
// (harness/train/probe/prober.h).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/dist/rendezvous.h"
#include "harness/train/profile/peak.h"
#include "harness/train/progress.h"
#include "harness/vocab/observer.h"
#include "harness/vocab/outcome.h"
#include "harness/vocab/records.h"

namespace lockstep::train {

class StepHook;

struct TrainOptions {
  std::filesystem::path out_dir;  // checkpoints go to out_dir/checkpoints
  int64_t stop_after = 0;  // stop after this step (the LR schedule is unchanged); 0 = run.steps
  std::filesystem::path resume_from;  // a checkpoint folder to continue from
  // Hooks of the embedder's own, called after the built-in ones (step_hook.h).
  std::vector<std::shared_ptr<StepHook>> hooks;
};

class PhaseTimer;

class Trainer {
 public:
  // Builds everything; throws config::ConfigError (exit 2) when the config cannot run here
  // (e.g. fp16 on a CPU LibTorch without fp16 GEMMs), std::runtime_error for other set-up failures.
  Trainer(const config::Config& cfg, const dist::RankInfo& who, TrainOptions opts);
  ~Trainer();

  TrainOutcome run(StepObserver& observer);
  Progress& progress();
  int64_t first_step() const;  // 1, or the step after the resumed checkpoint
  int rank() const;
  int world() const;
  // The properties of this rank's GPU (unset on a CPU), for the peak table.
  std::optional<GpuInfo> gpu() const;

 private:
  struct Impl;
  static void run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step);
  std::unique_ptr<Impl> impl_;
};

// Environment facts for summaries (LibTorch version, BLAS, CPU, host, git commit).
std::map<std::string, std::string> describe_environment(const std::string& device, int64_t threads,
                                                        int world);

}  // namespace lockstep::train
