#include "harness/dist/comm.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "harness/util/process.h"

namespace lockstep::dist {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

#if LOCKSTEP_HAVE_GLOO
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (master_addr == "127.0.0.1" || master_addr == "localhost")
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Gloo's TCP device serves its sockets from one event-loop thread (level-triggered epoll). When
// data arrives while a ProcessGroupGloo worker holds the pair's lock, the loop's handler
// try-locks, gives up "until the next tick" and goes back to epoll, which reports the same
// readable socket at once: the loop spins, on the CPU the lock holder needs, until the scheduler
// preempts it at its next tick. Measured on the 2-core CI machine with a rank per CPU: a third of
// 16 KiB all-reduces took 3-4 ms (one tick at 250 Hz) instead of 0.2 ms, and the tiny model's
// ddp2 step 16.5 ms (sd 2.1) instead of 11.1 (sd 0.6) (bench/RESULTS.md "Gloo's event loop"). At
// SCHED_IDLE the loop runs only when nothing else on its CPU can, so it never preempts the lock
// holder; its work (reading a socket, waking a waiter) is done as soon as the rank waits for it.
// The loop is the thread the device's constructor starts; returns its ids.
std::vector<int> gloo_device_with_idle_loop(const std::string& master_addr,
                                            std::shared_ptr<::gloo::transport::Device>& device) {
  const std::vector<int> before = util::thread_ids();
  device = gloo_device(master_addr);
  std::vector<int> set;
  for (int tid : util::thread_ids())
    if (!std::binary_search(before.begin(), before.end(), tid) && util::run_only_when_idle(tid))
      set.push_back(tid);
  return set;
}
#endif

}  // namespace

double WaitTime::ms() const {
  double ms = host_ms_;
  for (const auto& [before, after] : spans_) ms += before.ms_until(after);
  return ms;
}

void WaitTime::merge(WaitTime&& other) {
  host_ms_ += other.host_ms_;
  for (auto& span : other.spans_) spans_.push_back(std::move(span));
  other = WaitTime();
}

Comm::Comm(const RankInfo& who, const ParallelConfig& cfg, const torch::Device& device)
    : rank_(who.rank),
      world_(who.world_size),
      device_(device),
      timeout_(static_cast<int64_t>(cfg.timeout_s * 1000.0)) {
  if (world_ == 1 && cfg.backend == "auto") return;
  // A dead peer must surface as the error Gloo raises (which names the collective and lets this
  // rank write its summary and exit 3), not as SIGPIPE killing this rank silently: Gloo's TCP pairs
  // write with writev, which raises SIGPIPE on a socket the peer has closed. (Python ignores
  // SIGPIPE, which is why torchrun's ranks never see this.) CI saw it once: rank 1 killed by
  // SIGKILL, rank 0 then "killed by signal 13 (Broken pipe)" with no summary.json.
  ::signal(SIGPIPE, SIG_IGN);
  c10d::TCPStoreOptions opts;
  opts.isServer = !who.agent_store && rank_ == 0;
  // A 1-rank group nobody launched hosts its own store on any free port: two such runs at once
  // must not meet on MASTER_PORT's default.
  opts.port = world_ == 1 && opts.isServer && who.source == "default"
                  ? 0
                  : static_cast<uint16_t>(who.master_port);
  opts.numWorkers = world_;
  opts.waitWorkers = false;
  opts.timeout = timeout_;
  store_ = c10::make_intrusive<c10d::TCPStore>(who.master_addr, opts);

  std::string backend = cfg.backend;
  if (backend == "auto") backend = device.is_cuda() ? "nccl" : "gloo";
  if (backend == "nccl") {
#if LOCKSTEP_HAVE_NCCL
    auto nopts = c10d::ProcessGroupNCCL::Options::create();
    nopts->timeout = timeout_;
    pg_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, rank_, world_, nopts);
    stream_ordered_ = true;
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
    pg_->enableCollectivesTiming();  // start events on NCCL's stream: Work::getDuration
#endif
#else
    throw std::runtime_error(
        "parallel.backend = \"nccl\": this LibTorch was built without NCCL (use gloo)");
#endif
  } else {
#if LOCKSTEP_HAVE_GLOO
    auto gopts = c10d::ProcessGroupGloo::Options::create(timeout_);
    std::shared_ptr<::gloo::transport::Device> dev;
    if (const char* off = std::getenv("LOCKSTEP_NO_IDLE_GLOO_LOOP"); off && *off)
      dev = gloo_device(who.master_addr);  // the user's choice: Gloo's loop as Gloo starts it
    else
      idle_loop_ = gloo_device_with_idle_loop(who.master_addr, dev);
    if (!idle_loop_.empty())
      loop_policy_ = "SCHED_IDLE (runs when the rank waits; never preempts it)";
    gopts->devices.push_back(dev);
    pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, world_, gopts);
#else
    throw std::runtime_error(
        "parallel.backend = \"gloo\": this LibTorch ships no Gloo headers (pip's wheels; use nccl)");
#endif
  }
  backend_ = backend;
  // Gloo in LibTorch 1.13 has no reduce_scatter; probe once (collectively) and fall back to an
  // all-reduce of which each rank keeps its shard (reduce_scatter_sum), reported as such.
  if (backend_ == "gloo") {
    auto probe_in = torch::zeros({world_}, torch::kFloat32);
    auto probe_out = torch::zeros({1}, torch::kFloat32);
    std::vector<at::Tensor> outs{probe_out};
    std::vector<std::vector<at::Tensor>> ins{std::vector<at::Tensor>(probe_in.split(1))};
    try {
      pg_->reduce_scatter(outs, ins)->wait(timeout_);
    } catch (const std::exception&) {
      native_rs_ = false;
    }
    barrier("setup");
  }
}

Comm::~Comm() = default;

void Comm::check_device(const torch::Tensor& t, const char* what) const {
  if (t.device() == device_) return;
  throw std::invalid_argument(std::string("collective ") + what + ": a tensor on " +
                              t.device().str() + ", but the communication device is " +
                              device_.str() + " (NCCL takes device tensors only)");
}

template <typename F>
void Comm::run(const char* what, uint64_t bytes, F&& issue) {
  if (!pg_) return;
  in_flight_.store(what);
  last_issued_.store(what);
  compat::NvtxRange range(nvtx_, what);
  try {
    if (stream_ordered_) {
      auto work = issue();
      compat::DeviceEvent before, after;
      before.record();
      work->wait();  // no timeout: the compute stream waits for the collective, the host does not
      after.record();
      wait_.add_device_span(std::move(before), std::move(after));
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
      timed_works_.push_back(std::move(work));
#endif
    } else {
      const auto t0 = Clock::now();
      issue()->wait(timeout_);
      const double ms = ms_since(t0);
      wait_.add_host_ms(ms);
      host_stream_ms_ += ms;
      if (!idle_loop_.empty() && ms > kStarvedLoopMs && ++slow_waits_ == 2) restore_loop(what, ms);
    }
  } catch (const std::exception& e) {
    fail(what, e);
  }
  bytes_ += bytes;
  in_flight_.store(nullptr);
}

// A loop at SCHED_IDLE on a CPU that another process keeps busy waits for that process to block,
// which a busy process never does: measured with one busy loop beside a 2-rank run, its
// all-reduces took 70 ms (P50) instead of 0.7 and a compare 108 s instead of 28. Such waits are
// far beyond a collective of this run's (1-3 ms on the tiny model), and they repeat: the second
// collective that waits over kStarvedLoopMs puts the loop back to the default policy for the rest
// of the run (one such wait is a peer that was late once: a stall, a slow first step), and the
// run's environment says so.
void Comm::restore_loop(const char* what, double ms) {
  for (int tid : idle_loop_) util::run_normally(tid);
  idle_loop_.clear();
  char note[200];
  std::snprintf(note, sizeof note,
                "SCHED_OTHER (was SCHED_IDLE until a second collective waited over %.0f ms, %s: "
                "%.0f ms; its CPU busy with other work, or a late peer)",
                kStarvedLoopMs, what, ms);
  loop_policy_ = note;
  std::cerr << "rank " << rank_ << ": Gloo's event loop back to SCHED_OTHER: collective " << what
            << " waited " << static_cast<int>(ms) << " ms\n";
}

void Comm::fail(const char* what, const std::exception& e) {
  std::string lost;
  // Lockstep's launcher records a rank it saw die under "lost"; give it a moment to notice.
  if (store_) {
    for (int i = 0; i < 30 && lost.empty(); ++i) {
      try {
        if (store_->check({"lost"})) {
          auto v = store_->get("lost");
          lost.assign(v.begin(), v.end());
          break;
        }
      } catch (...) {
        break;  // the store itself is gone
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string msg = std::string(e.what());
  msg = msg.substr(0, msg.find('\n'));
  throw CommError("rank " + std::to_string(rank_) + ": collective " + what + " failed" +
                  (lost.empty() ? std::string(" (a peer rank was lost or timed out)")
                                : " because " + lost + " was lost") +
                  ": " + msg);
}

void Comm::allreduce_sum(torch::Tensor& t, const char* what) {
  check_device(t, what);
  std::vector<at::Tensor> ts{t};
  // ring all-reduce: each rank sends 2 (W-1)/W of the buffer
  const uint64_t bytes =
      static_cast<uint64_t>(2.0 * (world_ - 1) / world_ * static_cast<double>(t.nbytes()));
  run(what, bytes, [&] { return pg_->allreduce(ts); });
}

void Comm::reduce_scatter_sum(torch::Tensor& full, torch::Tensor& shard, const char* what) {
  check_device(full, what);
  check_device(shard, what);
  if (world_ == 1) {
    shard.copy_(full.narrow(0, 0, shard.numel()));
    return;
  }
  const int64_t S = shard.numel();
  if (!native_rs_) {
    // One all-reduce of `full` in place, each rank keeping its own chunk: one collective, where
    // one reduce per owner was W collectives, each a chain of thread wake-ups over loopback (on
    // the 2-core CI machine the two reduces of a 2-rank ZeRO-2 step took as long as its five other
    // collectives together). It sends twice a reduce-scatter's bytes, counted as such; on 2 ranks
    // every element is a + b either way. `full` is the caller's scratch: its contents are
    // undefined afterwards, as with the reduces.
    const uint64_t bytes =
        static_cast<uint64_t>(2.0 * (world_ - 1) / world_ * static_cast<double>(full.nbytes()));
    std::vector<at::Tensor> ts{full};
    run(what, bytes, [&] { return pg_->allreduce(ts); });
    shard.copy_(full.narrow(0, rank_ * S, S));
    return;
  }
  std::vector<at::Tensor> outs{shard};
  std::vector<std::vector<at::Tensor>> ins{std::vector<at::Tensor>(full.split(S))};
  const uint64_t bytes = static_cast<uint64_t>(static_cast<double>(world_ - 1) / world_ *
                                               static_cast<double>(full.nbytes()));
  run(what, bytes, [&] { return pg_->reduce_scatter(outs, ins); });
}

void Comm::allgather(torch::Tensor& shard, torch::Tensor& full, const char* what) {
  check_device(shard, what);
  check_device(full, what);
  if (world_ == 1) {
    full.narrow(0, 0, shard.numel()).copy_(shard);
    return;
  }
  const int64_t S = shard.numel();
  std::vector<std::vector<at::Tensor>> outs{std::vector<at::Tensor>(full.split(S))};
  std::vector<at::Tensor> ins{shard};
  const uint64_t bytes = static_cast<uint64_t>(static_cast<double>(world_ - 1) / world_ *
                                               static_cast<double>(full.nbytes()));
  run(what, bytes, [&] { return pg_->allgather(outs, ins); });
}

void Comm::barrier(const char* what) {
  if (!pg_) return;
  in_flight_.store(what);
  try {
    pg_->barrier()->wait(timeout_);  // the host waits: that is what a barrier is for
  } catch (const std::exception& e) {
    fail(what, e);
  }
  in_flight_.store(nullptr);
}

WaitTime Comm::take_wait() {
  WaitTime w;
  w.merge(std::move(wait_));
  return w;
}

uint64_t Comm::take_bytes() {
  uint64_t b = bytes_;
  bytes_ = 0;
  return b;
}

double Comm::take_stream_ms() {
  double ms = host_stream_ms_;
  host_stream_ms_ = 0;
#if LOCKSTEP_TORCH_AT_LEAST(2, 2)
  for (const auto& w : timed_works_) {
    try {
      ms += w->getDuration();
    } catch (const std::exception&) {
      // a work NCCL did not time (e.g. coalesced): its wait is still in take_wait()
    }
  }
#endif
  timed_works_.clear();
  return ms;
}

std::string Comm::in_flight() const {
  if (const char* w = in_flight_.load()) return w;
  if (!stream_ordered_) return "";
  const char* last = last_issued_.load();
  return last
             ? std::string("last issued ") + last + " (NCCL: the device waits for it, not the host)"
             : "";
}

}  // namespace lockstep::dist
