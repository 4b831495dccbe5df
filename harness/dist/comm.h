// Collectives over PyTorch's own distributed engine (c10d: Gloo on CPU, NCCL on CUDA), timed and
// byte-counted per step. A world of one has no process group and every collective is a no-op,
// unless parallel.backend names a backend: then a real 1-rank group runs every collective.
//
// Timing. Gloo: the host waits for each collective (on a CPU the host is the device) and that wait
// is timed on the host clock. NCCL: the host never waits; each collective is issued, and the
// compute stream is made to wait for its end (Work::wait() without a timeout: stream-ordered; a
// timeout would block the host until the collective ends). The time the step waited is measured
// on the compute stream by a pair of CUDA events around that stream-wait, and the collective's own
// duration on NCCL's stream by the work's start and end events (LibTorch >= 2.2); both are read
// once the step has synchronized, so timing adds no host sync.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// Time a step spent waiting for collectives, resolved once the step has synchronized (ms()).
class WaitTime {
 public:
  void add_host_ms(double ms) { host_ms_ += ms; }
  void add_device_span(compat::DeviceEvent before, compat::DeviceEvent after) {
    spans_.emplace_back(std::move(before), std::move(after));
  }
  void merge(WaitTime&& other);
  // Host waits plus the device spans (reads their events: after the step's host sync).
  double ms() const;
  bool empty() const { return host_ms_ == 0 && spans_.empty(); }

 private:
  double host_ms_ = 0;
  std::vector<std::pair<compat::DeviceEvent, compat::DeviceEvent>> spans_;
};

class Comm {
 public:
  // Connects to the job's store and builds the process group (world_size > 1, or a backend named
  // explicitly), or a local no-op communicator. `backend` "auto" picks nccl on CUDA (when
  // LibTorch has it), gloo otherwise. Every collective's tensors must live on `device`.
  Comm(const RankInfo& who, const ParallelConfig& cfg, const torch::Device& device);
  ~Comm();

  int rank() const { return rank_; }
  int world() const { return world_; }
  const std::string& backend_name() const { return backend_; }
  const torch::Device& device() const { return device_; }
  // NVTX ranges around each collective ([profile] nvtx).
  void set_nvtx(bool on) { nvtx_ = on; }

  // In place: t = sum over ranks.
  void allreduce_sum(torch::Tensor& t, const char* what);
  // full: (W * S) on every rank -> shard: (S) = sum over ranks of full[rank*S : (rank+1)*S]. full
  // is scratch: its contents are undefined afterwards.
  void reduce_scatter_sum(torch::Tensor& full, torch::Tensor& shard, const char* what);
  // shard: (S) -> full: (W * S), rank r's shard at [r*S, (r+1)*S).
  void allgather(torch::Tensor& shard, torch::Tensor& full, const char* what);
  // Blocks the host until every rank is here (set-up, checkpoints; never inside a step).
  void barrier(const char* what);

  // Per-step accounting: the time the step waited in collectives since the last take, and bytes
  // this rank sent.
  WaitTime take_wait();
  uint64_t take_bytes();
  // The collectives' own time on the communication stream since the last call (NCCL, LibTorch
  // >= 2.2; Gloo: the host waits, the same as take_wait). Call after the step's host sync.
  double take_stream_ms();
  // The collective this rank is waiting in right now; on NCCL (the host does not wait) the last
  // one issued. "" when none: read by the watchdog.
  std::string in_flight() const;
  // Whether reduce_scatter is native, or emulated by an all-reduce of which each rank keeps its
  // shard (Gloo in LibTorch 1.13 has none).
  bool native_reduce_scatter() const { return native_rs_; }
  // Gloo: the scheduling policy of its TCP device's event loop, which runs at SCHED_IDLE (comm.cpp
  // says why) until a second collective waits over kStarvedLoopMs; "" without a Gloo group,
  // with LOCKSTEP_NO_IDLE_GLOO_LOOP set, or where the kernel refused.
  const std::string& loop_policy() const { return loop_policy_; }
  static constexpr double kStarvedLoopMs = 50;

 private:
  template <typename F>
  void run(const char* what, uint64_t bytes, F&& issue);
  // Every tensor of a collective on the communication device (NCCL rejects host tensors deep
  // inside, which would read as a lost rank); throws std::invalid_argument otherwise.
  void check_device(const torch::Tensor& t, const char* what) const;
  [[noreturn]] void fail(const char* what, const std::exception& e);
  void restore_loop(const char* what, double ms);

  int rank_ = 0, world_ = 1;
  torch::Device device_{torch::kCPU};
  std::string backend_ = "none";
  std::chrono::milliseconds timeout_{60000};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<compat::CommBackend> pg_;
  bool native_rs_ = true;
  std::vector<int> idle_loop_;  // Gloo's event loop while it runs at SCHED_IDLE
  std::string loop_policy_;
  int slow_waits_ = 0;           // collectives that waited over kStarvedLoopMs
  bool stream_ordered_ = false;  // NCCL: waits are stream-ordered, timed by device events
  bool nvtx_ = false;
  WaitTime wait_;
  double host_stream_ms_ = 0;
  std::vector<c10::intrusive_ptr<c10d::Work>> timed_works_;  // NCCL works of this step
  uint64_t bytes_ = 0;
  std::atomic<const char*> in_flight_{nullptr};
  std::atomic<const char*> last_issued_{nullptr};
};

}  // namespace lockstep::dist
