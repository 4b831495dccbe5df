// Peak FLOP/s of the device, per compute dtype, for MFU. GPUs: a table of datasheet figures
// (dense). CPUs: what `lockstep calibrate` measured on this machine (a GEMM peak per dtype and
// thread count), cached on disk. Unknown -> no number: MFU is then reported as "unknown".
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "variants/precision_traits.h"

namespace lockstep {

struct PeakFlops {
  std::optional<double> flops;  // per rank
  std::string source;           // where the number comes from, or why it is unknown
};

// Datasheet dense peak for a GPU name (as nvidia-smi prints it) and compute dtype
// ("fp32" | "tf32" | "bf16" | "fp16"); unset when the GPU is not in the table.
std::optional<double> gpu_table_peak(const std::string& gpu_name, const std::string& dtype);

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
// cpu_peak dtype (fp32 for fp32/tf32; none for fp16); "cuda" -> the table by the name nvidia-smi
// reports, in the precision's gpu_peak column (variants/precision_traits.h).
PeakFlops resolve_peak(const std::string& device, variants::Compute compute, int threads,
                       const std::string& libtorch);

}  // namespace lockstep
