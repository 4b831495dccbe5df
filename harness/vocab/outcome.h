// What a training run knows at its end (or at a failure): its records, its memory, its profiled
// window. Produced by the trainer (harness/train/trainer.h); torch-free, so run folders and
// summaries read it without LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/host_work.h"
#include "harness/vocab/records.h"

namespace lockstep::train {

class TraceLog;  // harness/train/profile/trace.h

// What the trainer knows at the end (or at a failure). The summary's statistics are computed by
// harness/runs/summary.h from the records.
struct TrainOutcome {
  RunStatus status = RunStatus::Ok;
  std::string failure;
  int64_t failed_step = 0;
  std::vector<StepRecord> records;
  MemoryAccounting memory;
  int64_t peak_memory_bytes = 0;
  int64_t peak_rss_bytes = 0;
  int64_t overflow_skips = 0;
  std::optional<double> loss_floor;
  std::map<std::string, std::string> env;
  // profiling window (harness/train/profile/profiler.h)
  std::vector<OpStat> top_ops;
  std::vector<OpStat> top_kernels;  // CUDA kernels by device time (empty on host clocks)
  std::vector<UnitCost> layer_costs;
  std::vector<RankMemory> memory_per_rank;
  int64_t profiled_steps = 0;
  std::shared_ptr<class TraceLog> trace;  // null when [profile] trace = false
  // the window's host work (harness/train/profile/host_work.h); none when [profile] host_work =
  // false or no step was counted
  std::optional<HostWork> host_work;
};

}  // namespace lockstep::train
