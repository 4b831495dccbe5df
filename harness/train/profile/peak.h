// Peak FLOP/s of the device, per compute dtype, for MFU. GPUs: a table of datasheet figures
// (dense), looked up by the rank's own device properties. CPUs: what `lockstep calibrate` measured
// on this machine (a GEMM peak per dtype and thread count), cached on disk. Unknown -> no number:
// MFU is then reported as "unknown".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "variants/precision_traits.h"

namespace lockstep {

struct PeakFlops {
  std::optional<double> flops;  // per rank
  std::string source;           // where the number comes from, or why it is unknown
};

// What the CUDA runtime reports for the device a rank runs on (cudaGetDeviceProperties of that
// device, never "GPU 0"). Torch-free: filled by harness/train/cuda_info.h.
struct GpuInfo {
  std::string name;          // e.g. "NVIDIA H100 PCIe"
  int sm_count = 0;          // multiprocessors
  int max_sm_clock_mhz = 0;  // peak SM clock
  int cc_major = 0, cc_minor = 0;
  int64_t memory_bytes = 0;
};

// The table row a GPU is, by its name and SM count: "A100", "H100 SXM", "H100 PCIe", "H200",
// "B200"; unset (with the reason in `why`) when no row fits. A name of the right family with
// another SM count (a MIG slice, another SKU) is no row: its peak is not the datasheet's.
std::optional<std::string> gpu_table_row(const GpuInfo& gpu, std::string* why = nullptr);

// Datasheet dense peak of `gpu` for a compute dtype ("fp32" | "tf32" | "bf16" | "fp16"); unset
// when the GPU is in no row (see gpu_table_row).
std::optional<double> gpu_table_peak(const GpuInfo& gpu, const std::string& dtype);

// The calibration cache: $LOCKSTEP_CACHE_DIR, else $XDG_CACHE_HOME/lockstep, else
// ~/.cache/lockstep.
std::filesystem::path calibration_file();
// Key of this machine + thread count + LibTorch version in the cache.
std::string calibration_key(int threads, const std::string& libtorch);
std::optional<double> cached_cpu_peak(int threads, const std::string& libtorch,
                                      const std::string& dtype);
void store_cpu_peak(int threads, const std::string& libtorch, const std::string& dtype,
                    double flops, const std::string& method);

// Resolves the peak for a run: device "cpu" -> the calibration cache, for the precision's
// cpu_peak dtype (fp32 for fp32/tf32; none for fp16); "cuda" -> the table, by the properties of
// the rank's own device (`gpu`; null = unknown), in the precision's gpu_peak column
// (variants/precision_traits.h).
PeakFlops resolve_peak(const std::string& device, variants::Compute compute, int threads,
                       const std::string& libtorch, const GpuInfo* gpu = nullptr);

}  // namespace lockstep
