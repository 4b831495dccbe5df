// The training loop of one rank: builds the reference model, applies the variants as layers
// (attention kernel, precision scope, sharding), and runs the configured steps, timing each phase.
// It produces StepRecords and leaves all formatting to its observers (reporters, writers).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/config/config.h"
#include "harness/dist/rendezvous.h"
#include "harness/train/peak.h"
#include "harness/train/probe_file.h"
#include "harness/train/records.h"

namespace lockstep::train {

struct TrainOptions {
  std::filesystem::path out_dir;  // checkpoints go to out_dir/checkpoints
  int64_t stop_after = 0;  // stop after this step (the LR schedule is unchanged); 0 = run.steps
  std::filesystem::path resume_from;  // a checkpoint folder to continue from
  // A checkpoints root: probe its checkpoints instead of training (harness/train/probe.h).
  std::filesystem::path probe_from;
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_start(int64_t first_step, int64_t last_step) {
    (void)first_step, (void)last_step;
  }
  virtual void on_step(const StepRecord& r) = 0;
};

// What the trainer knows at the end (or at a failure). The summary's statistics are computed by
// harness/runs/summary.h from the records.
struct TrainOutcome {
  std::string status = "ok";  // "ok" | "nonfinite" | "failed" | "lost_rank" | "hang"
  std::string failure;
  int64_t failed_step = 0;
  std::vector<StepRecord> records;
  MemoryAccounting memory;
  int64_t peak_memory_bytes = 0;
  int64_t peak_rss_bytes = 0;
  int64_t overflow_skips = 0;
  std::optional<double> loss_floor;
  std::map<std::string, std::string> env;
  // profiling window (harness/train/profiler.h)
  std::vector<OpStat> top_ops;
  std::vector<OpStat> top_kernels;  // CUDA kernels by device time (empty on host clocks)
  std::vector<UnitCost> layer_costs;
  std::vector<RankMemory> memory_per_rank;
  int64_t profiled_steps = 0;
  std::shared_ptr<class TraceLog> trace;  // null when [profile] trace = false
};

// Live state the watchdog reads from another thread.
struct Progress {
  std::atomic<int64_t> step{0};
  std::atomic<const char*> phase{"setup"};
  std::atomic<int64_t> step_started_ns{0};
  std::function<std::string()> in_flight;  // the collective being waited in
};

class PhaseTimer;

class Trainer {
 public:
  // Builds everything; throws config::ConfigError (exit 2) when the config cannot run here
  // (e.g. fp16 on a CPU LibTorch without fp16 GEMMs), std::runtime_error for other set-up failures.
  Trainer(const config::Config& cfg, const dist::RankInfo& who, TrainOptions opts);
  ~Trainer();

  TrainOutcome run(StepObserver& observer);
  // TrainOptions::probe_from: the forward at each of its checkpoints, on the probe batches, under
  // this config's numerics (harness/train/probe.h). One rank, zero_stage 0.
  ProbeRecord probe();
  Progress& progress();
  int64_t first_step() const;  // 1, or the step after the resumed checkpoint
  int rank() const;
  int world() const;
  // The properties of this rank's GPU (unset on a CPU), for the peak table.
  std::optional<GpuInfo> gpu() const;

 private:
  struct Impl;
  static void run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step);
  std::unique_ptr<Impl> impl_;
};

// Environment facts for summaries (LibTorch version, BLAS, CPU, host, git commit).
std::map<std::string, std::string> describe_environment(const std::string& device, int64_t threads,
                                                        int world);

}  // namespace lockstep::train
