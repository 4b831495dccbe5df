// MFU of the reference workload against this CPU's calibrated GEMM peak, fp32 and bf16, at two
// model sizes. Prints one table; the ratio is the number to watch (targets on the 2-core CI CPU:
// >= 85% fp32 and >= 75% bf16 at d_model 256).
//
// Each cell is R separate processes (default 3), run round-robin over the cells so a slow spell
// on a shared machine lands on every cell alike; the table gives the median and the range. One
// process alone moved by +-3 MFU points from run to run on the CI VM.
//
//   build/bench/mfu_bench [OUT_DIR] [REPEATS]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "bench_util.h"
#include "harness/stats/statistics.h"

using namespace lockstep::bench;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const fs::path out =
      argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "lockstep-mfu-bench";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  fs::create_directories(out);
  // Calibrate afresh in this run, so the peak and the runs see the same machine state.
  if (run({"calibrate", "--threads", "1", "--dtypes", "fp32", "bf16", "--seconds", "1"},
          out / "calibrate.log") != 0) {
    std::cerr << "calibrate failed; see " << (out / "calibrate.log") << "\n";
    return 3;
  }
  const std::vector<std::pair<std::string, std::string>> cells = {
      {"mfu_d128", "fp32"}, {"mfu_d128", "bf16"}, {"mfu_d256", "fp32"}, {"mfu_d256", "bf16"}};
  struct Cell {
    std::vector<double> mfu, tps, gflops;
    double peak = 0;
    int failed = 0;
  };
  std::map<std::pair<std::string, std::string>, Cell> res;
  for (int r = 0; r < repeats; ++r)
    for (const auto& [model, dtype] : cells) {
      const std::string tag = model + "-" + dtype + "-" + std::to_string(r);
      const fs::path dir = out / tag;
      fs::remove_all(dir);
      Cell& c = res[{model, dtype}];
      int rc = run({"run", "bench/configs/" + model + ".toml", "--set",
                    "precision.compute=" + dtype, "--out", dir.string(), "--quiet", "--no-history"},
                   out / (tag + ".log"));
      if (rc != 0) {
        ++c.failed;
        continue;
      }
      auto s = read_json(dir / "summary.json");
      const double tps = s["tokens_per_sec"].get<double>();
      const double achieved = tps * s["flops_per_token"].get<double>();
      c.peak = s["peak_flops"].is_number() ? s["peak_flops"].get<double>() : 0;
      c.tps.push_back(tps);
      c.gflops.push_back(achieved / 1e9);
      if (c.peak > 0) c.mfu.push_back(100.0 * achieved / c.peak);
    }
  std::printf("%-10s %-5s %12s %14s %12s %8s %16s\n", "model", "dtype", "tokens/s", "model GFLOP/s",
              "peak GFLOP/s", "MFU", "MFU range");
  using lockstep::stats::median;
  for (const auto& key : cells) {
    const Cell& c = res[key];
    if (c.mfu.empty()) {
      std::printf("%-10s %-5s all %d runs failed (see %s)\n", key.first.c_str(), key.second.c_str(),
                  c.failed, out.c_str());
      continue;
    }
    const auto [lo, hi] = std::minmax_element(c.mfu.begin(), c.mfu.end());
    std::printf("%-10s %-5s %12.0f %14.1f %12.1f %7.1f%% %7.1f-%.1f%%%s\n", key.first.c_str(),
                key.second.c_str(), median(c.tps), median(c.gflops), c.peak / 1e9, median(c.mfu),
                *lo, *hi, c.failed ? " (some runs failed)" : "");
  }
  std::printf(
      "(median of %d processes per row; MFU = flops_per_token x tokens/s / calibrated GEMM "
      "peak; formula: PaLM appendix B, 6N + 12LHQT)\n",
      repeats);
  return 0;
}
