// ZeRO-style sharding as a layer over the unchanged model (stages 0-3), on c10d collectives.
//
// The model's parameters are regrouped into units (unit 0: embeddings + final LayerNorm + tied
// head; unit i: block i-1). Each unit's parameters and gradients become views into one flat fp32
// buffer, padded to a multiple of the world size W (never a silent fallback) and split into W
// equal shards; rank r owns shard r.
//
//   stage 0  data parallel: bucketed all-reduce of the flat gradients (averaged); every rank
//            updates everything
//   stage 1  + AdamW state sharded: each rank updates its shard; parameters all-gathered
//   stage 2  + gradients reduce-scattered into per-rank shards; the full gradient buffers are
//            freed between steps
//   stage 3  + parameters sharded: a unit's parameters are all-gathered just before its forward
//            and again just before its backward (tensor hook on its output), freed after use
//
// Every stage runs the same elementwise AdamW (harness/train/adamw.h) on the slice it owns, so
// ZeRO changes where the math runs, not the math.
#pragma once

#include <filesystem>
#include <vector>

#include "harness/dist/comm.h"
#include "harness/train/optim_config.h"
#include "harness/train/records.h"
#include "workloads/gpt.h"

namespace lockstep::variants {

class Sharding final : public workloads::UnitHooks {
 public:
  Sharding(workloads::GPT& model, dist::Comm& comm, int stage, double bucket_mb,
           const train::OptimConfig& optim);
  ~Sharding() override;

  // Before the first micro-step of a step: zeroes (or re-allocates) the gradient buffers.
  void begin_step();
  // After each micro-step's backward; `last` = the step's final micro-step. Reduces gradients
  // across ranks (averaged) when they are complete.
  void end_backward(bool last);

  // Squared L2 norm of the reduced gradient per unit (global: summed over shards and ranks).
  std::vector<double> unit_grad_norms_sq();
  // Non-finite elements in the reduced gradient (global).
  int64_t count_nonfinite_grads();
  // The same count as a (1) tensor on the communication device, before any read-back.
  torch::Tensor nonfinite_grads_tensor();
  // Multiplies the reduced gradient by s (fp16 unscaling, clipping, fault injection).
  void scale_grads(double s);
  // Adds noise ~ N(0, std^2) to the reduced gradient (fault injection: an exploding gradient).
  void perturb_grads(double std, uint64_t seed);
  // AdamW on the owned slices at 1-based optimizer step t, then re-assembles parameters.
  void step(double lr, int64_t t);

  MemoryAccounting accounting() const;
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
  void pre_backward(int unit);
  torch::Tensor& owned_grad(Unit& u);

  workloads::GPT& model_;
  dist::Comm& comm_;
  int stage_;
  int64_t bucket_numel_;
  train::OptimConfig optim_;
  std::vector<std::unique_ptr<Unit>> units_;
  bool first_micro_ = true;
  int next_to_finalize_ = -1;  // stage 3: the unit whose backward completes next
};

}  // namespace lockstep::variants
