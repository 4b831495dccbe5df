#include "harness/serve/model/model_service.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <tuple>
#include <utility>

#include "harness/serve/load.h"
#include "harness/train/model_builder.h"
#include "harness/util/clock.h"

namespace lockstep::serve {
namespace {

void spin_ns(int64_t ns) {
  const int64_t until = util::steady_now_ns() + ns;
  volatile double sink = 1;
  while (util::steady_now_ns() < until)
    for (int i = 0; i < 64; ++i) sink = sink * 1.0000001 + 1e-9;
}

// oneDNN creates (JITs) a reduced-precision kernel on a shape's first run, and creating kernels
// from two threads at once crashes Debian's libdnnl (std::bad_alloc or bad_array_new_length in
// brgemm_kernel_create; measured: every run of configs/serve/baseline.toml with
// precision.compute = "bf16", two workers, 6-s load, crashed; one worker never did). So under
// autocast on the CPU a shape's first forward runs alone (exclusive), and a shape whose first
// run is done runs concurrently (shared); every service in the process shares the lock (oneDNN's
// kernel cache is per process), and the cache is made large enough (set before oneDNN's first
// use, unless the user set it) that a done shape's kernels stay cached.
class KernelCreationGuard {
 public:
  // Holds the process-wide lock for one forward: exclusive when `key`'s first run is not done
  // yet, shared otherwise; inactive when `active` is false.
  KernelCreationGuard(bool active, std::tuple<int64_t, int64_t, std::string> key)
      : key_(std::move(key)) {
    if (!active) return;
    {
      std::lock_guard<std::mutex> g(state().done_mutex);
      first_ = state().done.count(key_) == 0;
    }
    if (first_) alone_ = std::unique_lock<std::shared_mutex>(state().lock);
    else shared_ = std::shared_lock<std::shared_mutex>(state().lock);
  }
  // The forward finished: a first run marks its shape done.
  ~KernelCreationGuard() {
    if (!first_) return;
    std::lock_guard<std::mutex> g(state().done_mutex);
    state().done.insert(key_);
  }

 private:
  struct State {
    std::shared_mutex lock;
    std::mutex done_mutex;
    std::set<std::tuple<int64_t, int64_t, std::string>> done;  // (batch, length, precision)
  };
  static State& state() {
    static State s;
    return s;
  }
  std::tuple<int64_t, int64_t, std::string> key_;
  bool first_ = false;
  std::unique_lock<std::shared_mutex> alone_;
  std::shared_lock<std::shared_mutex> shared_;
};

}  // namespace

ModelService::ModelService(const config::Config& cfg) {
  m_ = train::build_rank_model(cfg, dist::RankInfo{});
  m_->model->eval();
  token_seed_ = static_cast<uint64_t>(cfg.integer("run.seed"));
  slowdown_pct_ = cfg.number("faults.slowdown_pct");
  first_shape_alone_ = m_->precision->autocasts() && m_->device.is_cpu();
  if (first_shape_alone_) {
    ::setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16384", 0);
    ::setenv("DNNL_PRIMITIVE_CACHE_CAPACITY", "16384", 0);
  }
}

ModelService::~ModelService() = default;

void ModelService::run(int lane, const std::vector<const Request*>& batch, int64_t padded_len,
                       std::vector<double>& scores) {
  (void)lane;
  const int64_t start = util::steady_now_ns();
  const auto B = static_cast<int64_t>(batch.size());
  auto x = torch::zeros({B, padded_len}, torch::kInt64);  // (B, T), right-padded with token 0
  auto last = torch::empty({B}, torch::kInt64);           // (B,) each request's last position
  for (int64_t b = 0; b < B; ++b) {
    fill_tokens(token_seed_, batch[static_cast<size_t>(b)]->id,
                batch[static_cast<size_t>(b)]->len, m_->model_cfg.vocab_size,
                x.data_ptr<int64_t>() + b * padded_len);
    last[b] = batch[static_cast<size_t>(b)]->len - 1;
  }
  torch::Tensor out;
  {
    KernelCreationGuard guard(first_shape_alone_,
                              std::make_tuple(B, padded_len, m_->precision->describe()));
    c10::InferenceMode inference;
    auto scope = m_->precision->forward_scope();
    auto logits = m_->model->forward(x.to(m_->device));  // (B, T, V)
    auto rows = torch::arange(B, torch::TensorOptions().dtype(torch::kInt64).device(m_->device));
    auto at_last = logits.index({rows, last.to(m_->device)});  // (B, V)
    out = torch::log_softmax(at_last.to(torch::kFloat32), -1).select(1, 0).to(torch::kCPU);  // (B,)
  }
  const float* s = out.data_ptr<float>();
  for (int64_t b = 0; b < B; ++b) scores[static_cast<size_t>(b)] = s[b];
  if (slowdown_pct_ > 0)
    spin_ns(static_cast<int64_t>(static_cast<double>(util::steady_now_ns() - start) *
                                 slowdown_pct_ / 100.0));
}

std::vector<double> ModelService::score_set(const ServeConfig& cfg) {
  std::vector<double> out;
  std::vector<double> one(1);
  for (const Request& r : fixed_request_set(cfg, cfg.score_requests)) {
    std::vector<const Request*> batch{&r};
    run(0, batch, r.len, one);
    out.push_back(one[0]);
  }
  return out;
}

double ModelService::run_batch(const PlannedBatch& b) {
  std::vector<double> scores(b.requests.size());
  const int64_t start = util::steady_now_ns();
  run(b.lane, b.requests, b.padded_len, scores);
  return static_cast<double>(util::steady_now_ns() - start) * 1e-9;
}

void ModelService::perturb_weights(double rel, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);  // on the host: the same noise on any device
  for (auto& p : m_->model->parameters()) {
    if (p.dim() < 2) continue;
    auto e = at::rand(p.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat64));
    e.mul_(2.0 * rel).sub_(rel).add_(1.0);
    p.mul_(e.to(p.device(), p.scalar_type()));
  }
}

std::string ModelService::device() const { return m_->device.str(); }
std::string ModelService::precision() const { return m_->precision->describe(); }

}  // namespace lockstep::serve
