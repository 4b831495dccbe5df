#include "harness/dist/comm.h"

#include <signal.h>

#include <thread>

namespace lockstep::dist {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  if (master_addr == "127.0.0.1" || master_addr == "localhost")
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

Comm::Comm(const RankInfo& who, const ParallelConfig& cfg, const torch::Device& device)
    : rank_(who.rank),
      world_(who.world_size),
      timeout_(static_cast<int64_t>(cfg.timeout_s * 1000.0)) {
  if (world_ == 1) return;
  // A dead peer must surface as the error Gloo raises (which names the collective and lets this
  // rank write its summary and exit 3), not as SIGPIPE killing this rank silently: Gloo's TCP pairs
  // write with writev, which raises SIGPIPE on a socket the peer has closed. (Python ignores
  // SIGPIPE, which is why torchrun's ranks never see this.) CI saw it once: rank 1 killed by
  // SIGKILL, rank 0 then "killed by signal 13 (Broken pipe)" with no summary.json.
  ::signal(SIGPIPE, SIG_IGN);
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(who.master_port);
  opts.isServer = !who.agent_store && rank_ == 0;
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
#else
    throw std::runtime_error(
        "parallel.backend = \"nccl\": this LibTorch was built without NCCL (use gloo)");
#endif
  } else {
    auto gopts = c10d::ProcessGroupGloo::Options::create(timeout_);
    gopts->devices.push_back(gloo_device(who.master_addr));
    pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, world_, gopts);
  }
  backend_ = backend;
  // Gloo in LibTorch 1.13 has no reduce_scatter; probe once (collectively) and fall back to one
  // reduce per shard, each to its owner (the same bytes as a reduce-scatter), reported as such.
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

template <typename F>
void Comm::run(const char* what, uint64_t bytes, F&& issue) {
  if (world_ == 1) return;
  in_flight_.store(what);
  auto t0 = Clock::now();
  try {
    issue()->wait(timeout_);
  } catch (const std::exception& e) {
    fail(what, e);
  }
  ms_ += ms_since(t0);
  bytes_ += bytes;
  in_flight_.store(nullptr);
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
  std::vector<at::Tensor> ts{t};
  // ring all-reduce: each rank sends 2 (W-1)/W of the buffer
  const uint64_t bytes =
      static_cast<uint64_t>(2.0 * (world_ - 1) / world_ * static_cast<double>(t.nbytes()));
  run(what, bytes, [&] { return pg_->allreduce(ts); });
}

void Comm::reduce_scatter_sum(torch::Tensor& full, torch::Tensor& shard, const char* what) {
  if (world_ == 1) {
    shard.copy_(full.narrow(0, 0, shard.numel()));
    return;
  }
  const int64_t S = shard.numel();
  if (!native_rs_) {
    const uint64_t bytes = static_cast<uint64_t>(static_cast<double>(world_ - 1) / world_ *
                                                 static_cast<double>(full.nbytes()));
    for (int owner = 0; owner < world_; ++owner) {
      std::vector<at::Tensor> part{full.narrow(0, owner * S, S)};
      c10d::ReduceOptions opts;
      opts.rootRank = owner;
      run(what, owner == 0 ? bytes : 0, [&] { return pg_->reduce(part, opts); });
    }
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
  run(what, 0, [&] { return pg_->barrier(); });
}

double Comm::take_ms() {
  double m = ms_;
  ms_ = 0;
  return m;
}

uint64_t Comm::take_bytes() {
  uint64_t b = bytes_;
  bytes_ = 0;
  return b;
}

std::string Comm::in_flight() const {
  const char* w = in_flight_.load();
  return w ? w : "";
}

}  // namespace lockstep::dist
