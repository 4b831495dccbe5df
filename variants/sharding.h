// ZeRO-style sharding as a layer over the unchanged model (stages 0-3), on c10d collectives.
//
// The model's parameters are regrouped into units (unit 0: embeddings + final LayerNorm + tied
// head; unit i: block i-1). Each unit's parameters and gradients become views into one flat fp32
// buffer, padded to a multiple of the world size W (never a silent fallback) and split into W
// equal shards; rank r owns shard r.
//
//   stage 0  data parallel: bucketed all-reduce of the flat gradients (averaged; one buffer for
//            all units, buckets of bucket_mb spanning units); every rank updates everything
//   stage 1  + AdamW state sharded: each rank updates its shard; parameters all-gathered (on the
//            CPU as one all-reduce of every unit's parameters: sync_params)
//   stage 2  + gradients reduce-scattered into per-rank shards; the full gradient buffers are
//            freed between steps
//   stage 3  + parameters sharded: a unit's parameters are all-gathered just before its forward
//            and again just before its backward (tensor hook on its output), freed after use
//
// Every stage runs the same elementwise optimizer update (the `[optim] impl` kernel, built in:
// variants/adamw.h) on the slice it owns, so ZeRO changes where the math runs, not the math.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>

#include "harness/dist/comm.h"
#include "workloads/gpt.h"

namespace lockstep::variants {

// The optimizer's elementwise update of one owned slice at 1-based optimizer step t. p, g, m, v,
// decay: same shape; m and v are the optimizer's state; decay is 1 where weight decay applies
// (matrices and embeddings) and 0 elsewhere (biases, LayerNorm). Called once per unit per step.
using ShardUpdate =
    std::function<void(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
                       const torch::Tensor& decay, double lr, int64_t t)>;

// Bytes one rank holds for parameters, gradients and optimizer state.
struct ShardMemory {
  int64_t param_bytes = 0, grad_bytes = 0, optimizer_state_bytes = 0;
};

class Sharding final : public workloads::UnitHooks {
 public:
  Sharding(workloads::GPT& model, dist::Comm& comm, int stage, double bucket_mb,
           ShardUpdate update);
  ~Sharding() override;

  // Before the first micro-step of a step: zeroes (or re-allocates) the gradient buffers.
  void begin_step();
  // After each micro-step's backward; `last` = the step's final micro-step. Reduces gradients
  // across ranks (averaged) when they are complete.
  void end_backward(bool last);

  // Squared L2 norm of the reduced gradient per unit (global: summed over shards and ranks).
  // `loss`, if given: the step's loss on this rank, a float64 tensor on the communication device,
  // summed across ranks in place by the same collective where the norms need one (stage >= 2:
  // each rank holds a shard), else by its own. Two back-to-back scalar all-reduces were two
  // rendezvous of every rank per step.
  std::vector<double> unit_grad_norms_sq(torch::Tensor* loss = nullptr);
  // Non-finite elements in the reduced gradient (global).
  int64_t count_nonfinite_grads();
  // The same count as a (1) tensor on the communication device, before any read-back.
  torch::Tensor nonfinite_grads_tensor();
  // Multiplies the reduced gradient by s (fp16 unscaling, clipping, fault injection).
  void scale_grads(double s);
  // Adds noise ~ N(0, std^2) to the reduced gradient (fault injection: an exploding gradient).
  void perturb_grads(double std, uint64_t seed);
  // Rounding-sized noise on the parameters the step computes with (the comparison's
  // numerical-noise envelope): each weight matrix element (dim >= 2: the matmul and embedding
  // weights; biases and LayerNorm stay) x (1 + e), e ~ U(-rel, rel), the same e at every
  // ZeRO stage and on every rank (drawn over the whole padded unit, each rank keeping its slice at
  // stage 3). restore_params() puts the unperturbed values back before the update, as autocast
  // computes with a rounded copy of the fp32 master weights and updates the master.
  void perturb_params(double rel, uint64_t seed);
  void restore_params();
  // The optimizer update on the owned slices at 1-based optimizer step t, then re-assembles
  // parameters.
  void step(double lr, int64_t t);

  // Every model parameter's full value / full reduced gradient (unit_parameters() order), copies
  // assembled from the shards: an all-gather where they are sharded (parameters at stage 3,
  // gradients at stages 2-3), so every rank calls it. For numerics checks
  // (tests/numerics/numerics_test.cpp); the step never calls it.
  std::vector<torch::Tensor> full_params();
  std::vector<torch::Tensor> full_grads();

  // Each unit's parameters as one flat buffer (padded): the model's parameters are views into it
  // at `offsets`, in unit_parameters() order. Whole at stages 0-2; stage 3 holds it only while
  // the unit is gathered.
  struct UnitLayout {
    torch::Tensor full;
    std::vector<torch::Tensor> params;
    std::vector<int64_t> offsets;
  };
  std::vector<UnitLayout> unit_layouts() const;

  ShardMemory accounting() const;
  int stage() const { return stage_; }
  int64_t padded_numel() const;

  // Checkpoint of this rank's optimizer-side state (owned params, m, v). Stage 0 state is
  // identical on all ranks: rank 0 writes it and every rank reads it.
  void save(const std::filesystem::path& dir) const;
  void load(const std::filesystem::path& dir);

  // UnitHooks (stage 3 gathers and frees around each unit).
  void before_forward(int unit) override;
  void after_forward(int unit, torch::Tensor& out) override;

 private:
  struct Unit;
  void gather_params(Unit& u);
  void release_params(Unit& u);
  void ensure_grad_storage(Unit& u);
  void release_grad_storage(Unit& u);
  void reduce_unit(Unit& u, bool accumulate);
  void reduce_all_units();     // stage 2: one reduce-scatter for every unit
  void sync_params();          // stages 1-2: every rank's updated shards to every rank
  int64_t shard_sum() const;   // the units' shards, summed: one rank's chunk of a packed collective
  void pre_backward(int unit);
  torch::Tensor& owned_grad(Unit& u);
  std::vector<torch::Tensor> split_full(bool grads);

  workloads::GPT& model_;
  dist::Comm& comm_;
  int stage_;
  int64_t bucket_numel_;
  torch::Tensor flat_grad_;  // stages 0-1: every unit's gradient, one slice each, bucketed across units
  torch::Tensor flat_param_;  // stages 1-2 on the CPU: every unit's parameters, one slice each
  ShardUpdate update_;
  std::vector<std::unique_ptr<Unit>> units_;
  bool first_micro_ = true;
  int next_to_finalize_ = -1;  // stage 3: the unit whose backward completes next
};

}  // namespace lockstep::variants
