// Collectives over PyTorch's own distributed engine (c10d: Gloo on CPU, NCCL on CUDA), timed and
// byte-counted per step. A world of one has no process group and every collective is a no-op.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness/compat/torch_compat.h"
#include "harness/dist/parallel_config.h"
#include "harness/dist/rendezvous.h"

namespace lockstep::dist {

// A collective failed (peer lost, timeout). what() names the collective and, when the launcher
// reported it, the lost rank.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Comm {
 public:
  // Connects to the job's store and builds the process group (world_size > 1), or a local no-op
  // communicator. `backend` "auto" picks nccl on CUDA (when LibTorch has it), gloo otherwise.
  Comm(const RankInfo& who, const ParallelConfig& cfg, const torch::Device& device);
  ~Comm();

  int rank() const { return rank_; }
  int world() const { return world_; }
  const std::string& backend_name() const { return backend_; }

  // In place: t = sum over ranks.
  void allreduce_sum(torch::Tensor& t, const char* what);
  // full: (W * S) on every rank -> shard: (S) = sum over ranks of full[rank*S : (rank+1)*S].
  void reduce_scatter_sum(torch::Tensor& full, torch::Tensor& shard, const char* what);
  // shard: (S) -> full: (W * S), rank r's shard at [r*S, (r+1)*S).
  void allgather(torch::Tensor& shard, torch::Tensor& full, const char* what);
  void barrier(const char* what);

  // Per-step accounting: time spent waiting in collectives, and bytes this rank sent.
  double take_ms();
  uint64_t take_bytes();
  // The collective this rank is waiting in right now ("" when none): read by the watchdog.
  std::string in_flight() const;
  // Whether reduce_scatter is native, or emulated by one reduce per shard, each to its owner
  // (Gloo in LibTorch 1.13 has none).
  bool native_reduce_scatter() const { return native_rs_; }

 private:
  template <typename F>
  void run(const char* what, uint64_t bytes, F&& issue);
  [[noreturn]] void fail(const char* what, const std::exception& e);

  int rank_ = 0, world_ = 1;
  std::string backend_ = "none";
  std::chrono::milliseconds timeout_{60000};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::CommBackend> pg_;
  bool native_rs_ = true;
  double ms_ = 0;
  uint64_t bytes_ = 0;
  std::atomic<const char*> in_flight_{nullptr};
};

}  // namespace lockstep::dist
