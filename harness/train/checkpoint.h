// Checkpoints: owned parameters and AdamW state (sharded per rank under ZeRO), the optimizer step,
// the loss-scale state and the RNG. The data cursor is the step itself: batches are a pure
// function of (seed, step, rank). Written into step-N.partial/, renamed to step-N/ once every
// rank has finished, then `latest` is replaced atomically; only the last `keep` are kept.
#pragma once

#include <filesystem>
#include <vector>

#include "harness/dist/comm.h"
#include "variants/sharding.h"

namespace lockstep::train {

struct CheckpointState {
  int64_t step = 0;       // last completed step
  int64_t opt_steps = 0;  // AdamW updates applied
  double loss_scale = 1;
  int64_t clean_steps = 0;
  // [stability] skip_outlier_z's window (losses and grad norms, oldest first); empty when off.
  std::vector<double> outlier_losses, outlier_norms;
};

void save_checkpoint(const std::filesystem::path& root, int64_t step, const CheckpointState& st,
                     variants::Sharding& sharding, dist::Comm& comm, int64_t keep);
// `dir` is a step-N folder, or a checkpoints root (its `latest` is used).
CheckpointState load_checkpoint(const std::filesystem::path& dir, variants::Sharding& sharding,
                                int rank);
// The folder `latest` points to under `root`; empty when there is none.
std::filesystem::path latest_checkpoint(const std::filesystem::path& root);

}  // namespace lockstep::train
