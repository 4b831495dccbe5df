// The gate's error rates, measured with real comparisons on this machine:
//   A/A: baseline vs itself, N trials -> how often the gate fails (false alarms; target <= 5%)
//   10% slowdown: baseline vs baseline + [faults] slowdown_pct = 10 -> how often the throughput
//   check catches it (detection; target >= 95%)
//
//   build/bench/ab_bench [TRIALS] [OUT_DIR] [both|aa|slow]
#include <cstdio>
#include <iostream>

#include "bench_util.h"

using namespace lockstep::bench;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 20;
  const fs::path out =
      argc > 2 ? fs::path(argv[2]) : fs::temp_directory_path() / "lockstep-ab-bench";
  const std::string which = argc > 3 ? argv[3] : "both";  // both | aa | slow
  fs::create_directories(out);
  int aa_fail = 0, aa_perf_fail = 0, slow_caught = 0, slow_runs = 0;
  double aa_sum_abs = 0;
  for (int t = 0; t < trials; ++t) {
    for (int kind = 0; kind < 2; ++kind) {
      if ((which == "aa" && kind == 1) || (which == "slow" && kind == 0)) continue;
      const fs::path dir = out / ((kind == 0 ? "aa-" : "slow-") + std::to_string(t));
      fs::remove_all(dir);
      std::vector<std::string> args{
          "compare",    "configs/baseline.toml", "configs/baseline.toml", "--steps", "60", "--out",
          dir.string(), "--no-history"};
      if (kind == 1) args.insert(args.end(), {"--set-variant", "faults.slowdown_pct=10"});
      const int rc = run(args, dir.string() + ".log");
      auto rep = read_json(dir / "report.json");
      bool throughput_failed = false, p99_failed = false;
      for (const auto& c : rep["checks"]) {
        if (c["name"] == "throughput") throughput_failed = !c["passed"].get<bool>();
        if (c["name"] == "p99 latency") p99_failed = !c["passed"].get<bool>();
      }
      const double d = rep["delta"]["tokens_per_sec_pct"]["value"].is_number()
                           ? rep["delta"]["tokens_per_sec_pct"]["value"].get<double>()
                           : NAN;
      if (kind == 0) {
        aa_fail += rc != 0;
        aa_perf_fail += throughput_failed || p99_failed;
        aa_sum_abs += std::fabs(d);
      } else {
        ++slow_runs;
        slow_caught += throughput_failed;
      }
      std::printf("trial %2d %-8s exit %d  tokens/s %+6.2f%%  throughput %s  p99 %s\n", t + 1,
                  kind == 0 ? "A/A" : "slow10%", rc, d, throughput_failed ? "FAIL" : "ok",
                  p99_failed ? "FAIL" : "ok");
      std::fflush(stdout);
    }
  }
  std::printf(
      "\nA/A false alarms: %d/%d = %.0f%% (performance checks: %d); mean |tokens/s delta| %.2f%%\n",
      aa_fail, trials, 100.0 * aa_fail / trials, aa_perf_fail, aa_sum_abs / trials);
  std::printf("10%% slowdown detected: %d/%d = %.0f%%\n", slow_caught, slow_runs,
              100.0 * slow_caught / std::max(1, slow_runs));
  return 0;
}
