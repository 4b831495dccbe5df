// Peak memory: tensor bytes from the allocator (a tracking wrapper over LibTorch's CPU allocator;
// the caching allocator's statistics on CUDA) and the process's resident high-water mark.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "harness/compat/torch_compat.h"
#include "harness/dist/comm.h"
#include "harness/vocab/records.h"

namespace lockstep::train {

// Installs the CPU tracking allocator (idempotent). Tensors allocated before stay untracked.
void install_memory_tracking();
// Live tensor bytes right now on `device`.
int64_t current_tensor_bytes(const torch::Device& device);
// Peak tensor bytes on `device` since the last reset.
int64_t peak_tensor_bytes(const torch::Device& device);
void reset_peak_tensor_bytes(const torch::Device& device);
// This rank's allocator figures since the last reset_peak_tensor_bytes().
struct MemoryStats {
  int64_t peak_allocated_bytes = 0;
  // The caching allocator's (CUDA): peak reserved, and reserved - allocated at those peaks (held
  // by the allocator, used by no tensor). Unset on a CPU: the tracking allocator caches nothing.
  std::optional<int64_t> peak_reserved_bytes;
  std::optional<int64_t> fragmentation_bytes;
  int64_t alloc_retries = 0;  // cudaMalloc failed, the cache was flushed and the call retried
  int64_t ooms = 0;           // out-of-memory errors the allocator raised
};
MemoryStats memory_stats(const torch::Device& device);
// Every rank's figures, gathered at the end of the run with one all-reduce (`ranks_meet`: every
// rank finished its steps); otherwise, or on one rank, this rank's alone.
std::vector<RankMemory> gather_memory(dist::Comm& comm, const MemoryStats& mine, bool ranks_meet);
// The allocator's state for the log after an out-of-memory error: a few lines.
std::string allocator_summary(const torch::Device& device);
// Whether `e` is an allocation failure (CUDA or host out of memory).
bool is_out_of_memory(const std::exception& e);

// Resident set high-water mark (VmHWM) of this process; reset_peak_rss() restarts it.
int64_t peak_rss_bytes();
void reset_peak_rss();

}  // namespace lockstep::train
