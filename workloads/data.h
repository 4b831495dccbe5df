// Token sources for the reference workload. Torch-free: a source fills plain int64 buffers and
// the trainer wraps them in tensors.
//
// Every sample is a pure function of (seed, global sample index): the batch a rank sees at a step
// is fixed by (seed, step, micro-step, rank), so resume and sharding reproduce exactly, and a
// 2-rank run sees the same global batch as a 1-rank run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workloads/data_config.h"

namespace lockstep::workloads {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Writes `len` tokens of global sample `index` into out[0..len).
  virtual void sample(uint64_t index, int64_t* out, int64_t len) const = 0;
  virtual std::string describe() const = 0;
  // Achievable loss (nats/token) when known: the synthetic stream's entropy rate.
  virtual std::optional<double> loss_floor() const { return std::nullopt; }
};

// `sample_len` = tokens per sample (seq_len + 1: inputs and shifted targets).
// Throws std::runtime_error naming the file for unreadable or too-short data.
std::unique_ptr<TokenSource> make_source(const DataConfig& data, int64_t vocab_size,
                                         int64_t sample_len, uint64_t seed);

// Which global samples a rank reads: global batch B split into W contiguous local slices.
struct BatchPlan {
  int64_t global_batch = 0, world_size = 1, grad_accum = 1;
  int64_t local_batch() const { return global_batch / world_size; }
  // 1-based step, 0-based micro-step, rank, 0-based row within the local batch.
  uint64_t index(int64_t step, int64_t micro, int64_t rank, int64_t row) const {
    return static_cast<uint64_t>(((step - 1) * grad_accum + micro) * global_batch +
                                 rank * local_batch() + row);
  }
};

// Statistics of one batch, logged per step for the loss-spike diagnosis.
struct BatchStats {
  double token_entropy = 0;  // nats, of the unigram distribution within the batch
  double repeat_share = 0;   // share of positions equal to their predecessor
  uint64_t hash = 0;         // FNV-1a of the tokens: replays the batch
};
BatchStats batch_stats(const int64_t* tokens, size_t n);

// splitmix64: the one RNG of the data layer (portable, unlike std distributions).
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace lockstep::workloads
