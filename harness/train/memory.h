// Peak memory: tensor bytes from the allocator (a tracking wrapper over LibTorch's CPU allocator;
// the caching allocator's statistics on CUDA) and the process's resident high-water mark.
#pragma once

#include <cstdint>

#include "harness/compat/torch_compat.h"

namespace lockstep::train {

// Installs the CPU tracking allocator (idempotent). Tensors allocated before stay untracked.
void install_memory_tracking();
// Live tensor bytes right now on `device`.
int64_t current_tensor_bytes(const torch::Device& device);
// Peak tensor bytes on `device` since the last reset.
int64_t peak_tensor_bytes(const torch::Device& device);
void reset_peak_tensor_bytes(const torch::Device& device);
// Resident set high-water mark (VmHWM) of this process; reset_peak_rss() restarts it.
int64_t peak_rss_bytes();
void reset_peak_rss();

}  // namespace lockstep::train
