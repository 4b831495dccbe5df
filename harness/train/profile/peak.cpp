#include "harness/train/profile/peak.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/util/files.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// Dense datasheet peaks (TFLOP/s; fp16 = bf16) per NVIDIA's datasheets. A row is found by the
// name's words (the family, plus the variant words that set a SKU apart) and must match the SM
// count the device reports: a MIG slice or an unlisted SKU of the same family has other peaks.
struct GpuRow {
  const char* label;
  const char* family;        // a whole word of the device name
  const char* required;      // a word the name must hold too (nullptr: none)
  const char* forbidden[2];  // words of other SKUs of the family (nullptr: none)
  int sms;
  double bf16, tf32, fp32;
};
const GpuRow kGpus[] = {
    {"A100", "A100", nullptr, {nullptr, nullptr}, 108, 312, 156, 19.5},  // SXM4 and PCIe alike
    {"H100 SXM", "H100", nullptr, {"PCIE", "NVL"}, 132, 989, 495, 67},   // "NVIDIA H100 80GB HBM3"
    {"H100 PCIe", "H100", "PCIE", {"NVL", nullptr}, 114, 756, 378, 51},  // "NVIDIA H100 PCIe"
    {"H200", "H200", nullptr, {"PCIE", "NVL"}, 132, 989, 495, 67},       // SXM; H200 NVL is lower
    {"B200", "B200", nullptr, {nullptr, nullptr}, 148, 2250, 1100, 75},  // HGX B200, 1000 W
};

std::vector<std::string> name_words(const std::string& name) {
  std::vector<std::string> words;
  std::string w;
  for (char c : name + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (!w.empty()) {
      words.push_back(w);
      w.clear();
    }
  }
  return words;
}

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

std::optional<std::string> gpu_table_row(const GpuInfo& gpu, std::string* why) {
  const auto words = name_words(gpu.name);
  auto has = [&](const char* w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  std::string reason = "\"" + gpu.name + "\" is not in the peak table";
  for (const auto& row : kGpus) {
    if (!has(row.family) || (row.required && !has(row.required))) continue;
    bool other_sku = false;
    for (const char* f : row.forbidden) other_sku = other_sku || (f && has(f));
    if (other_sku) continue;
    if (gpu.sm_count == row.sms) return std::string(row.label);
    reason = "\"" + gpu.name + "\" reports " + std::to_string(gpu.sm_count) + " SMs; the table's " +
             row.label + " has " + std::to_string(row.sms) +
             " (a MIG slice or another SKU: its peak is not the datasheet's)";
  }
  if (why) *why = reason;
  return std::nullopt;
}

std::optional<double> gpu_table_peak(const GpuInfo& gpu, const std::string& dtype) {
  const auto label = gpu_table_row(gpu);
  if (!label) return std::nullopt;
  for (const auto& row : kGpus) {
    if (*label != row.label) continue;
    if (dtype == "bf16" || dtype == "fp16") return row.bf16 * 1e12;
    if (dtype == "tf32") return row.tf32 * 1e12;
    if (dtype == "fp32") return row.fp32 * 1e12;
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
                       const std::string& libtorch, const GpuInfo* gpu) {
  PeakFlops p;
  const auto& t = variants::traits(compute);
  if (device == "cuda") {
    if (!gpu) {
      p.source = "unknown: no device properties for this rank's GPU";
      return p;
    }
    std::string why;
    const auto row = gpu_table_row(*gpu, &why);
    const std::string column = variants::name_of(t.gpu_peak);
    p.flops = gpu_table_peak(*gpu, column);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g TFLOP/s", p.flops ? *p.flops / 1e12 : 0.0);
    p.source = p.flops ? "datasheet dense " + column + " peak of the " + *row + " (" + buf +
                             "): \"" + gpu->name + "\", " + std::to_string(gpu->sm_count) +
                             " SMs, max SM clock " + std::to_string(gpu->max_sm_clock_mhz) + " MHz"
                       : "unknown: " + why;
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
