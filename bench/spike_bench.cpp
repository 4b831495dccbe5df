// The loss-spike detector's operating figures (harness/diagnose/spikes.h), measured with real
// runs of configs/baseline.toml on this machine:
//   * each injected fault (corrupt_batch_at, lr_spike_at, grad_blowup_at, nonfinite_at) at many
//     steps of the 200-step schedule and of a 60-step and a 120-step one (--steps): is there an
//     event at the fault (the step after it for lr_spike_at: the LR of step k shows in the loss
//     of k+1), within 2 steps, and is the injected cause named first?
//   * clean runs at N seeds, 200 and 60 steps: any loss, gradient-norm or non-finite event is a
//     false flag (a step-time spike alone is the host's noise, not the loss's: not counted).
// Each faulty run stops 15 steps after its fault (--stop-after; the schedule keeps its length).
// Runs go two at a time; run folders are kept in OUT_DIR and reused when complete (pass --fresh
// to rerun them), so a change of the detector alone is re-measured in seconds.
//
//   ninja -C build spike_bench && build/bench/spike_bench [SEEDS] [OUT_DIR] [--fresh] [--export]
//
// Prints Markdown tables (bench/RESULTS.md, "Loss-spike detector"). --export also writes the runs'
// curves as tests/data/spikes/{clean,faults}.tsv, the recorded curves spike_detector_test.cpp
// judges (only the fields the detector and the cause ranking read on one rank).
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "bench_util.h"
#include "harness/diagnose/report.h"
#include "harness/util/files.h"
#include "harness/util/process.h"
#include "harness/runs/run_folder.h"

using namespace lockstep;
namespace fs = std::filesystem;

namespace {

struct Job {
  std::string name;
  std::vector<std::string> args;  // after `lockstep`
  fs::path dir;
  std::string fault;  // "" = clean
  int64_t step = 0;   // the fault's step
  int64_t length = 0;
};

const std::map<std::string, std::string> kCause{{"corrupt_batch_at", "data"},
                                                {"lr_spike_at", "lr"},
                                                {"grad_blowup_at", "grad"},
                                                {"nonfinite_at", "numerics"}};

Job faulty(const fs::path& out, const std::string& fault, int64_t step, int64_t length) {
  Job j;
  j.name = fault + "-" + std::to_string(step) + "-of-" + std::to_string(length);
  j.dir = out / j.name;
  j.fault = fault, j.step = step, j.length = length;
  j.args = {"run",           "configs/baseline.toml",
            "--steps",       std::to_string(length),
            "--set",         "faults." + fault + "=" + std::to_string(step),
            "--stop-after",  std::to_string(std::min(length, step + 15)),
            "--out",         j.dir.string(),
            "--quiet",       "--no-history"};
  return j;
}

Job clean(const fs::path& out, int seed, int64_t length) {
  Job j;
  j.name = "clean-seed" + std::to_string(seed) + "-of-" + std::to_string(length);
  j.dir = out / j.name;
  j.length = length;
  j.args = {"run",   "configs/baseline.toml", "--steps", std::to_string(length),
            "--set", "run.seed=" + std::to_string(seed),
            "--out", j.dir.string(),         "--quiet", "--no-history"};
  return j;
}

// A run folder is complete once it has its summary (a non-finite run writes one too).
bool complete(const Job& j) {
  return fs::exists(j.dir / "summary.json");
}

// One run's curve as "# run NAME" and then "step loss grad_norm [lr batch_entropy
// batch_repeat_share]" lines (the cause fields only with `causes`).
std::string curve_tsv(const Job& j, bool causes) {
  std::string out = "# run " + j.name + "\n";
  char buf[160];
  for (const auto& r : runs::read_metrics(j.dir / "metrics.jsonl")) {
    if (causes)
      std::snprintf(buf, sizeof buf, "%lld %.6g %.5g %.4g %.4g %.3g\n",
                    static_cast<long long>(r.step), r.loss, r.grad_norm, r.lr, r.batch_entropy,
                    r.batch_repeat_share);
    else
      std::snprintf(buf, sizeof buf, "%lld %.6g %.5g\n", static_cast<long long>(r.step), r.loss,
                    r.grad_norm);
    out += buf;
  }
  return out;
}

struct Verdict {
  bool found = false, named_first = false;
  int64_t event_step = 0;
  std::string top;
};

Verdict judge(const Job& j, const diagnose::DiagnoseReport& r) {
  Verdict v;
  const int64_t expect = j.fault == "lr_spike_at" ? j.step + 1 : j.step;
  for (const auto& d : r.diagnoses)
    if (std::llabs(d.event.step - expect) <= 2 || (d.event.step <= expect && d.event.last_step >= expect)) {
      v.found = true;
      v.event_step = d.event.step;
      v.top = d.causes.empty() ? "" : d.causes.front().cause;
      v.named_first = v.top == kCause.at(j.fault);
      if (v.named_first) break;
    }
  return v;
}

// Loss, gradient-norm or non-finite events of a clean run (step-time spikes alone excluded).
std::vector<int64_t> false_flags(const diagnose::DiagnoseReport& r) {
  std::vector<int64_t> out;
  for (const auto& d : r.diagnoses)
    if (d.event.has("loss") || d.event.has("grad_norm") || d.event.has("nonfinite"))
      out.push_back(d.event.step);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 20;
  fs::path out = fs::temp_directory_path() / "lockstep-spike-bench";
  bool fresh = false, export_tsv = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fresh") == 0)
      fresh = true;
    else if (std::strcmp(argv[i], "--export") == 0)
      export_tsv = true;
    else if (positional++ == 0)
      seeds = std::atoi(argv[i]);
    else
      out = argv[i];
  }
  fs::create_directories(out);

  const std::map<int64_t, std::vector<int64_t>> fault_steps{
      {200, {10, 12, 15, 20, 25, 30, 40, 60, 90, 120, 150, 180, 195}},
      {120, {15, 30, 60, 100}},
      {60, {10, 15, 20, 30, 40, 50, 55}}};
  std::vector<Job> jobs;
  for (const auto& [length, steps] : fault_steps)
    for (const auto& [fault, cause] : kCause)
      for (int64_t s : steps) jobs.push_back(faulty(out, fault, s, length));
  for (int seed = 1; seed <= seeds; ++seed)
    for (int64_t length : {200, 60}) jobs.push_back(clean(out, seed, length));

  std::vector<std::vector<std::string>> argvs;
  std::vector<fs::path> logs;
  for (const auto& j : jobs) {
    if (!fresh && complete(j)) continue;
    fs::remove_all(j.dir);
    std::vector<std::string> a{LOCKSTEP_BIN};
    a.insert(a.end(), j.args.begin(), j.args.end());
    argvs.push_back(a);
    logs.push_back(out / (j.name + ".log"));
  }
  std::fprintf(stderr, "spike_bench: %zu runs to do, %zu reused, in %s\n", argvs.size(),
               jobs.size() - argvs.size(), out.string().c_str());
  const auto cwd = fs::current_path();
  fs::current_path(LOCKSTEP_SOURCE_DIR);
  {  // two runs at a time, one per core
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < 2; ++w)
      workers.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < argvs.size();) {
          try {
            util::wait_for(util::spawn(argvs[i], logs[i]), 1800);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "spike_bench: %s\n", e.what());
          }
        }
      });
    for (auto& t : workers) t.join();
  }
  fs::current_path(cwd);

  // Faults: found (an event at the fault) and named first, per fault, length and step.
  std::printf("| fault | run length | step: found, named first |\n|---|---|---|\n");
  std::map<std::string, std::pair<int, int>> per_fault;  // named first, total
  int found_all = 0, named_all = 0, total_all = 0;
  for (const auto& [length, steps] : fault_steps)
    for (const auto& [fault, cause] : kCause) {
      std::string cells;
      for (int64_t s : steps) {
        Job j = faulty(out, fault, s, length);
        std::string cell;
        if (!complete(j)) {
          cell = "no run";
        } else {
          const Verdict v = judge(j, diagnose::diagnose_run(j.dir));
          cell = !v.found ? "missed" : v.named_first ? "yes" : "found, top " + v.top;
          found_all += v.found, named_all += v.named_first;
          auto& pf = per_fault[fault];
          pf.first += v.named_first, ++pf.second;
        }
        ++total_all;
        cells += (cells.empty() ? "" : "; ") + std::to_string(s) + " " + cell;
      }
      std::printf("| %s | %lld | %s |\n", fault.c_str(), static_cast<long long>(length),
                  cells.c_str());
    }
  std::printf("\nFaults: %d of %d found, %d named first (", found_all, total_all, named_all);
  bool first = true;
  for (const auto& [fault, nt] : per_fault)
    std::printf("%s%s %d/%d", first ? "" : ", ", fault.c_str(), nt.first, nt.second), first = false;
  std::printf(")\n");

  // Clean seeds: false flags.
  std::printf("\n| clean runs | runs | runs with a false flag | flagged steps |\n|---|---|---|---|\n");
  for (int64_t length : {200, 60}) {
    int runs = 0, flagged = 0;
    std::string steps;
    for (int seed = 1; seed <= seeds; ++seed) {
      Job j = clean(out, seed, length);
      if (!complete(j)) continue;
      ++runs;
      const auto ff = false_flags(diagnose::diagnose_run(j.dir));
      if (!ff.empty()) ++flagged;
      for (int64_t s : ff)
        steps += (steps.empty() ? "" : ", ") + std::string("seed ") + std::to_string(seed) +
                 " step " + std::to_string(s);
    }
    std::printf("| %lld steps | %d | %d | %s |\n", static_cast<long long>(length), runs, flagged,
                steps.empty() ? "none" : steps.c_str());
  }

  if (export_tsv) {
    const fs::path data = fs::path(LOCKSTEP_SOURCE_DIR) / "tests" / "data" / "spikes";
    fs::create_directories(data);
    std::string clean_tsv =
        "# Clean runs of configs/baseline.toml (--set run.seed=N, --steps 200 or 60), recorded by\n"
        "# bench/spike_bench --export: step loss grad_norm\n";
    std::string faults_tsv =
        "# Runs of configs/baseline.toml with one [faults] key at a step (--steps LENGTH, stopped\n"
        "# 15 steps after it), recorded by bench/spike_bench --export: step loss grad_norm lr\n"
        "# batch_entropy batch_repeat_share\n";
    for (const auto& j : jobs) {
      if (!complete(j)) continue;
      (j.fault.empty() ? clean_tsv : faults_tsv) += curve_tsv(j, !j.fault.empty());
    }
    util::write_atomic(data / "clean.tsv", clean_tsv);
    util::write_atomic(data / "faults.tsv", faults_tsv);
    std::fprintf(stderr, "spike_bench: wrote %s/{clean,faults}.tsv\n", data.string().c_str());
  }
  return 0;
}
