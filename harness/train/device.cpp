#include "harness/train/device.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#if defined(LOCKSTEP_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif
#if LOCKSTEP_HAVE_NCCL
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

namespace lockstep::train {

torch::Device select_device(const std::string& device, const dist::RankInfo& who) {
  if (device != "cuda") return torch::Device(torch::kCPU);
  if (!torch::cuda::is_available())
    throw std::invalid_argument("cuda requested but this LibTorch (" +
                                std::string(compat::torch_version()) + ") sees no CUDA device");
  std::string why;
  const auto index =
      dist::cuda_device_for(who.local_rank, static_cast<int>(torch::cuda::device_count()), &why);
  if (!index) throw std::invalid_argument("rank " + std::to_string(who.rank) + ": " + why);
  compat::cuda_set_device(*index);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(*index));
}

std::optional<GpuInfo> gpu_info(const torch::Device& device) {
#if defined(LOCKSTEP_WITH_CUDA)
  if (!device.is_cuda()) return std::nullopt;
  const c10::DeviceIndex index = device.has_index() ? device.index() : 0;
  // Attributes, not the cudaDeviceProp struct: the struct's layout is the toolkit's we compile
  // against, which need not be the one LibTorch was built with (issue 36); an attribute is an int
  // asked of the runtime by name. The name is the struct's first field, at offset 0 in every layout.
  auto attr = [index](cudaDeviceAttr a) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, index) == cudaSuccess ? v : 0;
  };
  GpuInfo g;
  g.name = at::cuda::getDeviceProperties(index)->name;
  g.sm_count = attr(cudaDevAttrMultiProcessorCount);
  g.cc_major = attr(cudaDevAttrComputeCapabilityMajor);
  g.cc_minor = attr(cudaDevAttrComputeCapabilityMinor);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    g.memory_bytes = static_cast<int64_t>(total_bytes);
  // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute is in every version (kHz).
  g.max_sm_clock_mhz = attr(cudaDevAttrClockRate) / 1000;
  return g;
#else
  (void)device;
  return std::nullopt;
#endif
}

std::string nvidia_driver_version() {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..."
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  std::string w, prev;
  while (words >> w) {
    if (prev == "Module") return w;
    prev = w;
  }
  return "";
}

std::map<std::string, std::string> gpu_environment(const torch::Device& device) {
  std::map<std::string, std::string> env;
#if defined(LOCKSTEP_WITH_CUDA)
  const auto g = gpu_info(device);
  if (!g) return env;
  env["gpu"] = g->name;
  env["gpu_index"] = std::to_string(device.has_index() ? device.index() : 0);
  env["gpu_sm_count"] = std::to_string(g->sm_count);
  env["gpu_max_sm_clock_mhz"] = std::to_string(g->max_sm_clock_mhz);
  env["gpu_compute_capability"] = std::to_string(g->cc_major) + "." + std::to_string(g->cc_minor);
  env["gpu_memory_bytes"] = std::to_string(g->memory_bytes);
  auto version = [](int v) {  // 12040 -> "12.4"
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  };
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) env["cuda_runtime"] = version(v);
  if (cudaDriverGetVersion(&v) == cudaSuccess) env["cuda_driver_api"] = version(v);
  const std::string driver = nvidia_driver_version();
  env["nvidia_driver"] = driver.empty() ? "unknown" : driver;
  env["cudnn"] = torch::cuda::cudnn_is_available()
                     ? std::to_string(at::detail::getCUDAHooks().versionCuDNN())
                     : "none";
#if LOCKSTEP_HAVE_NCCL
  env["nccl"] = c10d::getNcclVersion();
#else
  env["nccl"] = "none (built without NCCL)";
#endif
  env["tf32_matmul"] = at::globalContext().allowTF32CuBLAS() ? "on" : "off";
#else
  (void)device;
#endif
  return env;
}

}  // namespace lockstep::train
