// What a rank computes with, built from a config and checked against the job: the device, the
// data, the model with the kernels the config selects, the numerics (precision), the process
// group and the sharding that runs the optimizer. The trainer (harness/train/trainer.h) and the
// function probe (harness/train/probe/prober.h) both start from it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "harness/config/config.h"
#include "harness/dist/comm.h"
#include "harness/dist/parallel_config.h"
#include "harness/dist/rendezvous.h"
#include "harness/kernels/registry.h"
#include "harness/train/faults/faults.h"
#include "harness/vocab/optim_config.h"
#include "harness/vocab/profile_config.h"
#include "harness/vocab/records.h"
#include "harness/vocab/run_config.h"
#include "harness/vocab/stability_config.h"
#include "variants/precision.h"
#include "variants/sharding.h"
#include "variants/weight_copies.h"
#include "workloads/data.h"
#include "workloads/data_config.h"
#include "workloads/gpt.h"
#include "workloads/model_config.h"

namespace lockstep::train {

// One micro-batch: inputs and next-token targets.
struct Batch {
  torch::Tensor x, y;  // (B, T), (B, T)
};

// One micro-batch's loss: what is reported, and what is differentiated (+ regularizers).
struct Losses {
  torch::Tensor reported, train;  // scalars
};

struct RankModel {
  RunConfig run;
  workloads::ModelConfig model_cfg;
  workloads::DataConfig data_cfg;
  OptimConfig optim;
  StabilityConfig stability;
  dist::ParallelConfig par;
  ProfileConfig prof;
  dist::RankInfo who;
  FaultInjector faults;
  torch::Device device{torch::kCPU};
  registry::Kernels kernels;  // the implementations the config selects (built-ins or plugins)
  std::unique_ptr<workloads::TokenSource> source;
  workloads::BatchPlan plan;
  workloads::GPT model{nullptr};
  std::unique_ptr<variants::Precision> precision;
  std::unique_ptr<dist::Comm> comm;
  std::unique_ptr<variants::Sharding> sharding;
  // The blocks' weights in the autocast dtype, one copy per unit per step (null where it does not
  // apply: fp32, ZeRO-3, CUDA graphs, a model that is not trained: the probe's, serving's).
  std::unique_ptr<variants::WeightCopies> weight_copies;

  // This rank's rows of the global micro-batch on the host, (B, T+1): a pure function of (seed,
  // step, micro, rank). Pinned on CUDA (to_device's copy then does not wait for the stream).
  torch::Tensor host_tokens(int64_t step, int64_t micro) const;
  // The tokens on the device as inputs and next-token targets. Into `stats` (when set): the
  // batch's statistics (the spike diagnosis reads them).
  Batch to_device(const torch::Tensor& tokens, StepRecord* stats) const;
  // The model's forward and the loss, x, y: (B, T), under the precision variant's scope.
  Losses model_loss(const torch::Tensor& x, const torch::Tensor& y);
};

struct BuildOptions {
  // Wraps the kernels the model calls before the faults do (the probe records their inputs).
  std::function<workloads::ModelKernels(workloads::ModelKernels)> wrap_kernels;
  bool probe = false;  // one rank, zero_stage 0
  bool trains = false;  // Trainer::run_steps trains it: the step's weight copies where they apply
};

// Throws config::ConfigError (exit 2) when the config cannot run here (e.g. fp16 on a CPU LibTorch
// without fp16 GEMMs), std::runtime_error for other set-up failures. Seeds LibTorch's generator
// and fixes its threads and deterministic kernels first: the same config builds the same model.
std::unique_ptr<RankModel> build_rank_model(const config::Config& cfg, const dist::RankInfo& who,
                                            const BuildOptions& opts = {});

}  // namespace lockstep::train
