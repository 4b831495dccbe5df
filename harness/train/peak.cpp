#include "harness/train/peak.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/util/files.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

struct GpuPeak {
  const char* name;
  double bf16, tf32, fp32;  // TFLOP/s, dense
};
// H100 SXM and H200 share the same compute; A100 (SXM/PCIe) per NVIDIA's datasheets.
constexpr GpuPeak kGpus[] = {
    {"H200", 989, 495, 67},
    {"H100", 989, 495, 67},
    {"A100", 312, 156, 19.5},
};

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown-cpu";
}

nlohmann::json read_cache() {
  std::error_code ec;
  if (!fs::exists(calibration_file(), ec)) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(util::read_file(calibration_file()));
  } catch (...) {
    return nlohmann::json::object();  // a corrupt cache is a missing cache
  }
}

}  // namespace

std::optional<double> gpu_table_peak(const std::string& gpu_name, const std::string& dtype) {
  for (const auto& g : kGpus) {
    if (gpu_name.find(g.name) == std::string::npos) continue;
    if (dtype == "bf16" || dtype == "fp16") return g.bf16 * 1e12;
    if (dtype == "tf32") return g.tf32 * 1e12;
    if (dtype == "fp32") return g.fp32 * 1e12;
  }
  return std::nullopt;
}

fs::path calibration_file() {
  if (const char* d = std::getenv("LOCKSTEP_CACHE_DIR"); d && *d)
    return fs::path(d) / "calibration.json";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return fs::path(x) / "lockstep" / "calibration.json";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/tmp") / ".cache" / "lockstep" / "calibration.json";
}

std::string calibration_key(int threads, const std::string& libtorch) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return std::string(host) + " | " + cpu_name() + " | threads " + std::to_string(threads) +
         " | libtorch " + libtorch;
}

std::optional<double> cached_cpu_peak(int threads, const std::string& libtorch,
                                      const std::string& dtype) {
  auto j = read_cache();
  auto key = calibration_key(threads, libtorch);
  if (!j.contains(key) || !j[key].contains(dtype) || !j[key][dtype].is_number())
    return std::nullopt;
  return j[key][dtype].get<double>();
}

void store_cpu_peak(int threads, const std::string& libtorch, const std::string& dtype,
                    double flops, const std::string& method) {
  auto j = read_cache();
  auto key = calibration_key(threads, libtorch);
  j[key][dtype] = flops;
  j[key]["method"] = method;
  util::write_atomic(calibration_file(), j.dump(2) + "\n");
}

PeakFlops resolve_peak(const std::string& device, variants::Compute compute, int threads,
                       const std::string& libtorch) {
  PeakFlops p;
  const auto& t = variants::traits(compute);
  if (device == "cuda") {
    std::string name;
    if (FILE* f = ::popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r")) {
      char buf[256];
      if (std::fgets(buf, sizeof buf, f)) name = buf;
      ::pclose(f);
    }
    while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
    const std::string column = variants::name_of(t.gpu_peak);
    p.flops = gpu_table_peak(name, column);
    p.source = p.flops ? "datasheet " + column + " peak of " + name
                       : "unknown GPU \"" + name + "\" (not in the peak table)";
    return p;
  }
  if (!t.cpu_peak) {
    p.source = std::string("unknown: no CPU GEMM peak for ") + t.name;
    return p;
  }
  const std::string dtype = variants::name_of(*t.cpu_peak);
  p.flops = cached_cpu_peak(threads, libtorch, dtype);
  p.source = p.flops ? "calibrated " + dtype + " GEMM peak, " + std::to_string(threads) +
                           " thread(s) (lockstep calibrate)"
                     : "unknown: no " + dtype + " calibration for " + std::to_string(threads) +
                           " thread(s) (run `lockstep calibrate`)";
  return p;
}

}  // namespace lockstep
