// MFU of the reference workload against this CPU's calibrated GEMM peak, fp32 and bf16, at two
// model sizes. Prints one table; the ratio is the number to watch (targets on the 2-core CI CPU:
// >= 85% fp32 and >= 75% bf16 at d_model 256).
//
// Each cell is R separate processes (default 3), run round-robin over the cells so a slow spell
// on a shared machine lands on every cell alike; the table gives the median and the range. One
// process alone moved by +-3 MFU points from run to run on the CI VM.
//
// The peak is calibrated afresh at the start of every round and the MFU is taken against the
// median of those R calibrations: one calibration alone moved by +-2% between bench runs on the
// CI VM (fp32 126.5 vs 132.0 GFLOP/s while the workload's tokens/s stayed within 0.2%), which
// moved every MFU in the table with it.
//
// A fifth row runs d_model 256 in bf16 with the kernels of the example plugin
// examples/plugins/fused_cpu (built by `./lockstep test`, or by examples/plugins/build-example.sh),
// interleaved with the other rows: the eager and the fused kernels side by side in one bench run.
// It is skipped, saying so, when the plugin file is missing.
//
//   build/bench/mfu_bench [OUT_DIR] [REPEATS] [PLUGIN.so]
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "bench_util.h"
#include "harness/stats/statistics.h"

using namespace lockstep::bench;
namespace fs = std::filesystem;

namespace {

// The targets on the 2-core CI CPU, per dtype.
double target_mfu(const std::string& dtype) { return dtype == "bf16" ? 0.75 : 0.85; }

// Where the rest of the step goes: one profiled process per cell. Every FLOP the MFU counts is a
// GEMM FLOP, so the GEMM operators' time in the step (median over the profiled steps, self time:
// aten::mm, addmm, addmm_, bmm, baddbmm) bounds the MFU from above even if every other operator
// cost nothing ("ceiling"), and the time left at the target after the GEMMs is what all the
// elementwise work, casts, layout copies, the loss and the optimizer would have to fit in.
// One row of the table: a bench config in a dtype, optionally with a plugin's kernels.
struct CellSpec {
  std::string model, dtype, label;
  std::vector<std::string> extra;  // --set overrides (the plugin and the kernels it selects)
};

std::vector<std::string> run_args(const CellSpec& c, const std::string& out) {
  std::vector<std::string> a{"run", "bench/configs/" + c.model + ".toml", "--set",
                             "precision.compute=" + c.dtype};
  for (const auto& e : c.extra) a.push_back("--set"), a.push_back(e);
  a.insert(a.end(), {"--out", out, "--quiet", "--no-history"});
  return a;
}

void print_gemm_ceiling(const fs::path& out, const std::vector<CellSpec>& cells,
                        std::map<std::string, double>& peak) {
  static const std::set<std::string> kGemm = {"aten::mm", "aten::addmm", "aten::addmm_",
                                              "aten::bmm", "aten::baddbmm"};
  std::printf("\n%-10s %-5s %9s %9s %9s %9s %10s %16s\n", "model", "dtype", "step ms", "GEMM ms",
              "other ms", "ceiling", "target", "other ms budget");
  for (const auto& c : cells) {
    // A plugin's kernels run their GEMMs inside themselves (no aten GEMM operator to count).
    if (!c.extra.empty()) continue;
    const auto& model = c.model;
    const auto& dtype = c.dtype;
    const fs::path dir = out / (model + "-" + dtype + "-profile");
    fs::remove_all(dir);
    // 30 steps with a 5-step window: 20 timed steps remain for the step time.
    auto args = run_args(c, dir.string());
    args.insert(args.begin() + 4, {"--set", "profile.window=5"});
    const int rc = run(args, out / (model + "-" + dtype + "-profile.log"));
    const double pk = peak.count(dtype) ? peak[dtype] : 0;
    if (rc != 0 || pk <= 0) {
      std::printf("%-10s %-5s profiled run failed (see %s)\n", model.c_str(), dtype.c_str(),
                  out.c_str());
      continue;
    }
    const auto s = read_json(dir / "summary.json");
    double gemm_ms = 0;
    for (const auto& op : s["top_ops"])
      if (kGemm.count(op["name"].get<std::string>())) gemm_ms += op["self_ms"].get<double>();
    const double step_ms = s["step_ms"]["p50"].get<double>();
    // tokens/s is tokens over the timed steps' total time, so this is the tokens of one step.
    const double tokens_per_step =
        s["tokens_per_sec"].get<double>() * s["step_ms"]["mean"].get<double>() / 1e3;
    const double flops_per_step = s["flops_per_token"].get<double>() * tokens_per_step;
    const double ceiling = flops_per_step / pk / (gemm_ms / 1e3);
    const double budget_ms = flops_per_step / (target_mfu(dtype) * pk) * 1e3 - gemm_ms;
    std::printf("%-10s %-5s %9.1f %9.1f %9.1f %8.1f%% %9.0f%% %16.1f\n", model.c_str(),
                dtype.c_str(), step_ms, gemm_ms, step_ms - gemm_ms, 100.0 * ceiling,
                100.0 * target_mfu(dtype), budget_ms);
  }
  std::printf(
      "(one profiled process per row: GEMM ms = self time of the GEMM operators per step, median "
      "over 5 profiled steps; ceiling = the MFU if every other operator were free; other ms "
      "budget = the step time at the target minus the GEMMs)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path out =
      argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "lockstep-mfu-bench";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const fs::path plugin = fs::absolute(
      argc > 3 ? fs::path(argv[3])
               : fs::path(LOCKSTEP_BIN).parent_path() / "examples/plugins/fused_cpu/libfused_cpu.so");
  fs::create_directories(out);
  std::vector<CellSpec> cells = {{"mfu_d128", "fp32", "fp32", {}},
                                 {"mfu_d128", "bf16", "bf16", {}},
                                 {"mfu_d256", "fp32", "fp32", {}},
                                 {"mfu_d256", "bf16", "bf16", {}}};
  if (fs::exists(plugin))
    cells.push_back({"mfu_d256", "bf16", "bf16+fused_cpu",
                     {"plugins.load=[\"" + plugin.string() + "\"]", "attention.impl=cpu_causal",
                      "model.activation=cpu_bias_gelu", "model.layer_norm=cpu_layer_norm",
                      "model.loss=cpu_cross_entropy", "optim.impl=cpu_adamw"}});
  else
    std::fprintf(stderr,
                 "mfu_bench: no %s: the fused_cpu row is skipped (build it: "
                 "examples/plugins/build-example.sh build fused_cpu)\n",
                 plugin.c_str());
  struct Cell {
    std::vector<double> achieved, tps;  // FLOP/s and tokens/s, one per process
    std::map<int, double> tps_by_round;
    int failed = 0;
  };
  std::map<std::pair<std::string, std::string>, Cell> res;  // (model, label)
  std::map<std::string, std::map<int, double>> peaks;  // dtype -> round -> calibrated FLOP/s
  for (int r = 0; r < repeats; ++r) {
    // Calibrate afresh in every round, so the peak sees the same machine states as the runs; the
    // runs of this round read it from the cache.
    const fs::path cal_log = out / ("calibrate-" + std::to_string(r) + ".log");
    if (run({"calibrate", "--threads", "1", "--dtypes", "fp32", "bf16", "--seconds", "1"},
            cal_log) != 0) {
      std::cerr << "calibrate failed; see " << cal_log << "\n";
      return 3;
    }
    for (const auto& spec : cells) {
      const std::string& dtype = spec.dtype;
      const std::string tag = spec.model + "-" + spec.label + "-" + std::to_string(r);
      const fs::path dir = out / tag;
      fs::remove_all(dir);
      Cell& c = res[{spec.model, spec.label}];
      int rc = run(run_args(spec, dir.string()), out / (tag + ".log"));
      if (rc != 0) {
        ++c.failed;
        continue;
      }
      auto s = read_json(dir / "summary.json");
      const double tps = s["tokens_per_sec"].get<double>();
      c.tps.push_back(tps);
      c.tps_by_round[r] = tps;
      c.achieved.push_back(tps * s["flops_per_token"].get<double>());
      if (s["peak_flops"].is_number()) peaks[dtype][r] = s["peak_flops"].get<double>();
    }
  }
  using lockstep::stats::median;
  std::map<std::string, double> peak;  // dtype -> median of the rounds' calibrations
  for (const auto& [dtype, by_round] : peaks) {
    std::vector<double> v;
    for (const auto& [round, flops] : by_round) v.push_back(flops);
    peak[dtype] = median(v);
  }
  std::printf("%-10s %-14s %12s %14s %12s %8s %16s\n", "model", "dtype", "tokens/s",
              "model GFLOP/s", "peak GFLOP/s", "MFU", "MFU range");
  for (const auto& spec : cells) {
    const Cell& c = res[{spec.model, spec.label}];
    const double pk = peak.count(spec.dtype) ? peak[spec.dtype] : 0;
    if (c.achieved.empty() || pk <= 0) {
      std::printf("%-10s %-14s all %d runs failed (see %s)\n", spec.model.c_str(),
                  spec.label.c_str(), c.failed, out.c_str());
      continue;
    }
    std::vector<double> mfu;
    for (double a : c.achieved) mfu.push_back(100.0 * a / pk);
    const auto [lo, hi] = std::minmax_element(mfu.begin(), mfu.end());
    std::printf("%-10s %-14s %12.0f %14.1f %12.1f %7.1f%% %7.1f-%.1f%%%s\n", spec.model.c_str(),
                spec.label.c_str(), median(c.tps), median(c.achieved) / 1e9, pk / 1e9,
                median(mfu), *lo, *hi, c.failed ? " (some runs failed)" : "");
  }
  for (const auto& [dtype, by_round] : peaks) {
    double lo = 1e300, hi = 0;
    for (const auto& [round, flops] : by_round) lo = std::min(lo, flops), hi = std::max(hi, flops);
    std::printf("%s peak: median of %zu calibrations %.1f GFLOP/s (range %.1f-%.1f)\n",
                dtype.c_str(), by_round.size(), peak[dtype] / 1e9, lo / 1e9, hi / 1e9);
  }
  std::printf(
      "(median of %d processes per row, against the median calibrated GEMM peak; MFU = "
      "flops_per_token x tokens/s / peak; formula: PaLM appendix B, 6N + 12LHQT)\n",
      repeats);
  // The plugin row against its eager twin, round by round (the two ran minutes apart at most).
  if (res.count({"mfu_d256", "bf16+fused_cpu"})) {
    const Cell& eager = res[{"mfu_d256", "bf16"}];
    const Cell& fused = res[{"mfu_d256", "bf16+fused_cpu"}];
    std::vector<double> gain;
    for (const auto& [round, tps] : fused.tps_by_round)
      if (eager.tps_by_round.count(round)) gain.push_back(100.0 * (tps / eager.tps_by_round.at(round) - 1));
    if (!gain.empty()) {
      const auto [lo, hi] = std::minmax_element(gain.begin(), gain.end());
      std::printf("d256 bf16 tokens/s, fused_cpu vs eager: %+.1f%% (median of %zu rounds, range "
                  "%+.1f%% to %+.1f%%)\n",
                  median(gain), gain.size(), *lo, *hi);
    }
  }
  print_gemm_ceiling(out, cells, peak);
  return 0;
}
