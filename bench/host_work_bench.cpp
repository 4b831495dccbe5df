// The host work of a training step (issue 52), Lockstep's reference trainer against the same GPT
// in PyTorch eager (bench/host_work_eager.py) on the same LibTorch, side by side in one run, at
// GPT-2 small's depth with a negligible width (bench/configs/host_work.toml: 12 layers, d_model
// 64, T 64, B 1, one thread), where a step is almost all dispatch.
//
// Per dtype (fp32, bf16) it prints:
//   counts  Lockstep: a real Trainer in this process with a HostWorkHook
//           (harness/train/profile/host_work.h) over 5 steps after the warm-up: aten operators,
//           allocations and host syncs per step (syncs split into inside the step and after it),
//           fill_, casts (aten::_to_copy) and weight casts (of a parameter) per step, against
//           the model's parameter count; eager: the same aten operators, syncs and
//           allocations (the allocator's memory records, profile_memory) from LibTorch's
//           profiler over 5 steps.
//   time    ms per step, the median of R rounds (default 5), each round one `lockstep run` and
//           one eager process per dtype in turn (each reports its median step).
// and the goals: Lockstep's ops < eager's; Lockstep's ms <= 0.5x eager's; bf16 <= 1.1x fp32.
//
//   ninja -C build host_work_bench lockstep && build/bench/host_work_bench [ROUNDS] [PYTHON]
// PYTHON: a python3 whose torch is this build's LibTorch (default /usr/bin/python3: Debian's
// python3-torch for the Debian build; the wheel build's is .venv/bin/python).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "harness/config/config.h"
#include "harness/kernels/install.h"
#include "harness/train/profile/host_work.h"
#include "harness/train/trainer.h"
#include "harness/util/cpu_capability.h"

using namespace lockstep;
namespace fs = std::filesystem;

namespace {

const char* kConfig = "bench/configs/host_work.toml";
constexpr int64_t kWarmup = 10, kCounted = 5;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

class Quiet final : public train::StepObserver {
  void on_step(const StepRecord&) override {}
};

struct Counts {
  double ops = 0, aten_ops = 0, allocs = 0, syncs_in = 0, syncs_after = 0, fills = 0, casts = 0,
         weight_casts = 0, params = 0;
  std::vector<std::pair<std::string, double>> top;
  std::map<std::string, std::string> where;  // operator -> calls per step in each phase
};

Counts count_lockstep(const std::string& dtype) {
  registry::install();
  const auto cfg = config::Config::load(
      std::string(LOCKSTEP_SOURCE_DIR) + "/" + kConfig,
      {"precision.compute=" + dtype, "run.steps=" + std::to_string(kWarmup + kCounted)});
  auto hook = std::make_shared<train::HostWorkHook>(kWarmup + 1, kWarmup + kCounted);
  train::TrainOptions opts;
  opts.out_dir = fs::temp_directory_path() / "lockstep-host-work";
  opts.hooks = {hook};
  train::Trainer trainer(cfg, dist::RankInfo{}, opts);
  Quiet quiet;
  const auto out = trainer.run(quiet);
  if (out.status != RunStatus::Ok) throw std::runtime_error("count run failed: " + out.failure);
  const auto& w = hook->counted();
  const double n = static_cast<double>(w.steps);
  Counts c;
  c.ops = w.total_ops() / n;
  c.allocs = w.total_allocs() / n;
  c.syncs_in = w.syncs_inside_step() / n;
  c.syncs_after = (w.total_syncs() - w.syncs_inside_step()) / n;
  for (const auto& [name, per_phase] : w.ops) {
    const double calls = w.calls(name) / n;
    if (name.rfind("aten::", 0) == 0) c.aten_ops += calls;
    c.top.emplace_back(name, calls);
    std::string where;
    for (int p = 0; p < kPhaseCount; ++p)
      if (per_phase[p] > 0)
        where += std::string(" ") + phase_name(static_cast<Phase>(p)) + " " +
                 std::to_string(per_phase[p] / n).substr(0, 5);
    if (getenv("HOST_WORK_ALL")) {
      where += "  <-";
      for (const auto& [root, k] :
           w.roots.count(name) ? w.roots.at(name) : std::map<std::string, int64_t>{})
        where += " " + root + " " + std::to_string(k / n).substr(0, 5) + ";";
    }
    c.where[name] = where;
  }
  c.fills = w.calls("aten::fill_") / n;
  c.casts = w.calls("aten::_to_copy") / n;
  c.weight_casts = w.total_weight_casts() / n;
  // The GPT's parameters: wte, wpe, ln_f (2), and per block ln_1, ln_2 and four Linear layers,
  // each a weight and a bias: 4 + 12 L (148 at 12 layers).
  c.params = 4 + 12 * static_cast<double>(cfg.integer("model.n_layers"));
  std::sort(c.top.begin(), c.top.end(), [](auto& a, auto& b) { return a.second > b.second; });
  return c;
}

double time_lockstep(const std::string& dtype, const fs::path& dir) {
  const fs::path out = dir / ("lockstep-" + dtype);
  fs::remove_all(out);
  const int rc = bench::run({"run", kConfig, "--set", "precision.compute=" + dtype, "--out",
                             out.string(), "--quiet", "--no-history"},
                            dir / ("lockstep-" + dtype + ".log"));
  if (rc != 0) throw std::runtime_error("lockstep run failed (" + dtype + "), see " + dir.string());
  return bench::read_json(out / "summary.json")["step_ms"]["p50"].get<double>();
}

nlohmann::json run_eager(const std::string& python, const std::string& dtype, const fs::path& dir,
                         int counted) {
  const fs::path log = dir / ("eager-" + dtype + ".json");
  const std::string cmd = python + " " + LOCKSTEP_SOURCE_DIR + "/bench/host_work_eager.py " +
                          dtype + " 50 " + std::to_string(counted) + " > " + log.string();
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("eager run failed: " + cmd);
  return bench::read_json(log);
}

}  // namespace

int main(int argc, char** argv) {
  util::ensure_aten_cpu_capability();
  const int rounds = argc > 1 ? std::stoi(argv[1]) : 5;
  const std::string python = argc > 2 ? argv[2] : "/usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / "lockstep-host-work-bench";
  fs::create_directories(dir);
  const std::vector<std::string> dtypes{"fp32", "bf16"};

  std::map<std::string, Counts> counts;
  std::map<std::string, nlohmann::json> eager_counts;
  for (const auto& d : dtypes) {
    counts[d] = count_lockstep(d);
    eager_counts[d] = run_eager(python, d, dir, static_cast<int>(kCounted));
  }
  std::map<std::string, std::vector<double>> ms_l, ms_e;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& d : dtypes) {
      ms_l[d].push_back(time_lockstep(d, dir));
      ms_e[d].push_back(run_eager(python, d, dir, 1)["ms_per_step"].get<double>());
    }
    std::fprintf(stderr, "host_work_bench: round %d/%d done\n", r + 1, rounds);
  }

  std::printf("LibTorch %s here; eager's torch %s (%s)\n", TORCH_VERSION,
              eager_counts["fp32"]["torch"].get<std::string>().c_str(), python.c_str());
  std::printf("\n%-5s %-8s %9s %9s %8s %10s %10s %7s %7s %8s %12s\n", "dtype", "trainer",
              "aten ops", "all ops", "allocs", "syncs in", "syncs aft", "fill_", "casts", "w.casts",
              "ms/step");
  for (const auto& d : dtypes) {
    const Counts& c = counts[d];
    std::printf("%-5s %-8s %9.0f %9.0f %8.0f %10.0f %10.0f %7.0f %7.0f %8.0f %12.2f\n", d.c_str(),
                "lockstep", c.aten_ops, c.ops, c.allocs, c.syncs_in, c.syncs_after, c.fills,
                c.casts, c.weight_casts, median(ms_l[d]));
    const auto& e = eager_counts[d];
    const auto& eo = e["ops"];
    std::printf("%-5s %-8s %9.0f %9s %8.0f %10s %10.0f %7.0f %7.0f %8s %12.2f\n", d.c_str(), "eager",
                e["ops_per_step"].get<double>(), "-", e["allocs_per_step"].get<double>(), "-",
                e["syncs_per_step"].get<double>(),
                eo.contains("aten::fill_") ? eo["aten::fill_"].get<double>() : 0.0,
                eo.contains("aten::_to_copy") ? eo["aten::_to_copy"].get<double>() : 0.0, "-",
                median(ms_e[d]));
  }
  std::printf("\nparameters: %.0f (weight casts per step: goal <= this)\n", counts["fp32"].params);
  std::printf(
      "\ngoals: Lockstep/eager ms  fp32 %.2f  bf16 %.2f  (<= 0.5);  Lockstep bf16/fp32 "
      "ms %.2f (<= 1.1);  ops Lockstep/eager fp32 %.2f  bf16 %.2f  (< 1)\n",
      median(ms_l["fp32"]) / median(ms_e["fp32"]), median(ms_l["bf16"]) / median(ms_e["bf16"]),
      median(ms_l["bf16"]) / median(ms_l["fp32"]),
      counts["fp32"].aten_ops / eager_counts["fp32"]["ops_per_step"].get<double>(),
      counts["bf16"].aten_ops / eager_counts["bf16"]["ops_per_step"].get<double>());
  for (const auto& d : dtypes) {
    std::printf("\nLockstep %s, operators per step (top 25), calls per step by phase:\n",
                d.c_str());
    for (size_t i = 0;
         i < std::min<size_t>(getenv("HOST_WORK_ALL") ? 100000 : 25, counts[d].top.size()); ++i)
      std::printf("  %-40s %8.1f  %s\n", counts[d].top[i].first.c_str(), counts[d].top[i].second,
                  counts[d].where[counts[d].top[i].first].c_str());
    std::printf("eager %s, operators per step (top 15):\n", d.c_str());
    std::vector<std::pair<double, std::string>> eager_top;
    for (const auto& [name, calls] : eager_counts[d]["ops"].items())
      eager_top.emplace_back(calls.get<double>(), name);
    std::sort(eager_top.rbegin(), eager_top.rend());
    for (size_t i = 0; i < std::min<size_t>(15, eager_top.size()); ++i)
      std::printf("  %-40s %8.1f\n", eager_top[i].second.c_str(), eager_top[i].first);
  }
  return 0;
}
