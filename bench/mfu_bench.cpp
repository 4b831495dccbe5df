// MFU of the reference workload against this CPU's calibrated GEMM peak, fp32 and bf16, at two
// model sizes. Prints one table; the ratio is the number to watch (targets on the 2-core CI CPU:
// >= 85% fp32 and >= 75% bf16 at d_model 256).
//
//   build/bench/mfu_bench [OUT_DIR]
#include <cstdio>
#include <iostream>

#include "bench_util.h"

using namespace lockstep::bench;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const fs::path out =
      argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "lockstep-mfu-bench";
  fs::create_directories(out);
  // Calibrate afresh in this run, so the peak and the runs see the same machine state.
  if (run({"calibrate", "--threads", "1", "--dtypes", "fp32", "bf16", "--seconds", "1"},
          out / "calibrate.log") != 0) {
    std::cerr << "calibrate failed; see " << (out / "calibrate.log") << "\n";
    return 3;
  }
  std::printf("%-10s %-5s %12s %14s %12s %8s\n", "model", "dtype", "tokens/s", "model GFLOP/s",
              "peak GFLOP/s", "MFU");
  for (const char* model : {"mfu_d128", "mfu_d256"})
    for (const char* dtype : {"fp32", "bf16"}) {
      const fs::path dir = out / (std::string(model) + "-" + dtype);
      fs::remove_all(dir);
      int rc = run({"run", std::string("bench/configs/") + model + ".toml", "--set",
                    std::string("precision.compute=") + dtype, "--out", dir.string(), "--quiet",
                    "--no-history"},
                   out / (std::string(model) + "-" + dtype + ".log"));
      if (rc != 0) {
        std::printf("%-10s %-5s run failed (exit %d)\n", model, dtype, rc);
        continue;
      }
      auto s = read_json(dir / "summary.json");
      const double tps = s["tokens_per_sec"].get<double>();
      const double achieved = tps * s["flops_per_token"].get<double>();
      const double peak = s["peak_flops"].is_number() ? s["peak_flops"].get<double>() : 0;
      std::printf("%-10s %-5s %12.0f %14.1f %12.1f %7.1f%%\n", model, dtype, tps, achieved / 1e9,
                  peak / 1e9, peak > 0 ? 100.0 * achieved / peak : 0.0);
    }
  std::printf("(MFU = flops_per_token x tokens/s / calibrated GEMM peak; %s)\n",
              "formula: PaLM appendix B, 6N + 12LHQT");
  return 0;
}
