// The device a rank trains on: chosen from its local rank (one GPU per rank, never shared), and
// described for the environment record, the history's machine key and the peak table.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "harness/compat/torch_compat.h"
#include "harness/dist/rendezvous.h"
#include "harness/train/profile/peak.h"

namespace lockstep::train {

// "cpu" -> the CPU. "cuda" -> cuda:<local_rank>, made this thread's current device. Throws
// std::invalid_argument (the caller's config error) when this LibTorch sees no CUDA device or the
// rank has no device of its own.
torch::Device select_device(const std::string& device, const dist::RankInfo& who);

// What the CUDA runtime reports for `device`; unset on a CPU (or a build without CUDA).
std::optional<GpuInfo> gpu_info(const torch::Device& device);

// The GPU's part of the environment record: gpu (name), gpu_sm_count, gpu_max_sm_clock_mhz,
// gpu_compute_capability, gpu_memory_bytes, nvidia_driver, cuda_runtime, cuda_driver_api, nccl,
// cudnn, tf32_matmul; empty on a CPU.
std::map<std::string, std::string> gpu_environment(const torch::Device& device);

// The NVIDIA kernel driver's version from /proc/driver/nvidia/version ("" when absent).
std::string nvidia_driver_version();

}  // namespace lockstep::train
