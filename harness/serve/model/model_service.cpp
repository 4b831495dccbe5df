#include "harness/serve/model/model_service.h"

#include <chrono>

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

}  // namespace

ModelService::ModelService(const config::Config& cfg) {
  m_ = train::build_rank_model(cfg, dist::RankInfo{});
  m_->model->eval();
  token_seed_ = static_cast<uint64_t>(cfg.integer("run.seed"));
  slowdown_pct_ = cfg.number("faults.slowdown_pct");
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

std::string ModelService::device() const { return m_->device.str(); }
std::string ModelService::precision() const { return m_->precision->describe(); }

}  // namespace lockstep::serve
