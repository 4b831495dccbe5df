// What a run produces: one StepRecord per optimizer step and a RunSummary at the end.
// Torch-free, so comparisons, reports and history read them without LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/vocab/phase.h"

namespace lockstep {

// The step's phase names (phase.h), in step order: the keys of phase_ms and of the JSON.
// "other" is the step time no phase accounts for.
inline const std::vector<std::string>& phase_names() {
  static const std::vector<std::string> names{
      phase_name(Phase::Data), phase_name(Phase::Forward),   phase_name(Phase::Backward),
      phase_name(Phase::Comm), phase_name(Phase::Optimizer), phase_name(Phase::Other)};
  return names;
}

struct StepRecord {
  int64_t step = 0;      // 1-based
  double loss = 0;       // mean over the global batch (NaN when non-finite)
  double grad_norm = 0;  // global L2 norm before clipping (after fp16 unscaling)
  double lr = 0;
  int64_t tokens = 0;  // tokens processed by all ranks in this step
  double step_ms = 0;
  double turn_wait_ms = 0;  // before the step, waiting for the turn (a compare timing pair)
  std::map<std::string, double> phase_ms;  // keys: phase_names()
  bool timed = false;                      // false for warmup steps
  // numerics
  double loss_scale = 1;         // fp16 dynamic loss scale (1 otherwise)
  bool overflow = false;         // fp16: non-finite gradients, update skipped
  bool skipped = false;          // update skipped (overflow, or an outlier under the mitigation)
  bool skipped_outlier = false;  // ... by [stability] skip_outlier_z
  int64_t nonfinite_grads = 0;   // count of non-finite gradient elements seen this step
  std::vector<double> unit_grad_norms;  // per unit: 0 = embeddings/head, 1..L = blocks
  // data (this rank's first micro-batch)
  double batch_entropy = 0;
  double batch_repeat_share = 0;
  uint64_t batch_hash = 0;
  // distribution: each rank logs its own file (rank 0: metrics.jsonl, rank r:
  // metrics.rank<r>.jsonl)
  int64_t rank = 0;
  double local_loss = 0;    // this rank's share of the batch (diagnoses cross-rank disagreement)
  uint64_t comm_bytes = 0;  // bytes this rank sent through collectives
  // The collectives' own time on the communication stream (NCCL; Gloo: the host waits, = the
  // comm phase's waits). comm_ms (phase_ms["comm"]) is the time the step waited for them.
  double comm_stream_ms = 0;
};

struct Percentiles {
  double p50 = 0, p95 = 0, p99 = 0, mean = 0;
};

// One rank's allocator figures over the run (CUDA: the caching allocator's statistics).
struct RankMemory {
  int64_t rank = 0;
  int64_t peak_allocated_bytes = 0;
  std::optional<int64_t> peak_reserved_bytes;  // unset on a CPU (nothing cached)
  std::optional<int64_t> fragmentation_bytes;  // peak reserved - peak allocated
  int64_t alloc_retries = 0;
  int64_t ooms = 0;
};

struct MemoryAccounting {
  int64_t param_bytes_per_rank = 0;
  int64_t grad_bytes_per_rank = 0;
  int64_t optimizer_state_bytes_per_rank = 0;
};

// One operator in the profiled window, per profiled step.
struct OpStat {
  std::string name;
  double calls = 0;     // calls per step
  double self_ms = 0;   // time in the operator itself, per step
  double total_ms = 0;  // including the operators it called, per step
};

// Measured cost of one model unit (pipeline-stage planning), ms per step.
struct UnitCost {
  std::string name;  // "embedding", "block i", "head+loss"
  double forward_ms = 0, backward_ms = 0;
};

// A plugin library a run loaded (`[plugins] load`): the exact build, by content.
struct PluginRef {
  std::string file;    // absolute path
  std::string sha256;  // of the file's bytes when it was loaded
};

// How a run ended. Text ("ok", "nonfinite", "failed", "lost_rank", "hang") only in summary.json,
// the history and the reports. The parent of a child run (harness/runs/child_run.h) also names
// what it saw where the run wrote no verdict of its own: a config error (exit 2), a crash, a run
// that could not start, a missing or unreadable summary, metrics or probe, a run never started.
enum class RunStatus {
  Ok,
  Nonfinite,
  Failed,
  LostRank,
  Hang,
  // Seen by the parent only (never in a summary.json):
  ConfigError,
  Crashed,
  CouldNotStart,
  NoSummary,
  NoProbe,
  UnreadableSummary,
  UnreadableMetrics,
  UnreadableProbe,
  NotRun
};

inline const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Ok: return "ok";
    case RunStatus::Nonfinite: return "nonfinite";
    case RunStatus::Failed: return "failed";
    case RunStatus::LostRank: return "lost_rank";
    case RunStatus::Hang: return "hang";
    case RunStatus::ConfigError: return "config error";
    case RunStatus::Crashed: return "crashed";
    case RunStatus::CouldNotStart: return "could not start";
    case RunStatus::NoSummary: return "no summary";
    case RunStatus::NoProbe: return "no probe";
    case RunStatus::UnreadableSummary: return "unreadable summary";
    case RunStatus::UnreadableMetrics: return "unreadable metrics";
    case RunStatus::UnreadableProbe: return "unreadable probe";
    case RunStatus::NotRun: return "not run";
  }
  return "?";
}
// A summary.json's status word: one a run writes itself, else nullopt.
inline std::optional<RunStatus> parse_run_status(const std::string& s) {
  for (RunStatus r : {RunStatus::Ok, RunStatus::Nonfinite, RunStatus::Failed, RunStatus::LostRank,
                      RunStatus::Hang})
    if (s == to_string(r)) return r;
  return std::nullopt;
}

struct RunSummary {
  std::string name;
  std::string config_hash;
  RunStatus status = RunStatus::Ok;
  std::string failure;  // one line, when status != Ok
  bool ok() const { return status == RunStatus::Ok; }
  int64_t failed_step = 0;
  int64_t steps = 0;  // completed steps
  int64_t timed_steps = 0;
  double final_loss = 0;
  std::optional<double> loss_floor;  // achievable loss (synthetic data)
  double tokens_per_sec = 0;
  std::optional<double> mfu;  // unset = unknown peak
  std::string mfu_formula;
  double flops_per_token = 0;
  std::optional<double> peak_flops;
  std::string peak_flops_source;  // e.g. "calibrated bf16 GEMM, 1 thread" or "table: H100 bf16"
  Percentiles step_ms;
  std::map<std::string, double> phase_share;  // phase -> share of the timed step time (0..1)
  std::map<std::string, double> phase_ms_mean;
  std::string bound;  // "compute-bound" | "input-bound" | "comm-bound"; "unknown" untimed
  int64_t peak_memory_bytes = 0;  // peak tensor bytes from the allocator
  int64_t peak_rss_bytes = 0;     // process high-water mark
  MemoryAccounting memory;
  double comm_bytes_per_step = 0;
  int64_t overflow_skips = 0;
  std::vector<OpStat> top_ops;      // by self time, from the profiled window
  std::vector<OpStat> top_kernels;  // CUDA kernels by device time (Kineto); empty on host clocks
  int64_t profiled_steps = 0;
  // Allocator figures of each rank (rank 0's alone when the ranks could not meet at the end).
  std::vector<RankMemory> memory_per_rank;
  std::vector<PluginRef> plugins;  // the plugin files the run loaded
  // environment
  std::map<std::string, std::string>
      env;  // libtorch, device, threads, blas, git_commit, host, world_size, ...
};

}  // namespace lockstep
