#include "harness/train/faults/faults.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "harness/util/clock.h"
#include "variants/sharding.h"

namespace lockstep::train {
namespace {

// Extra work, not idleness: a sleeping core lets the host shift time back to the next step (on this
// VM a 10% sleep measured as a 0-3% slowdown), a busy core does not.
void spin_ms(double ms) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
  while (std::chrono::steady_clock::now() < until) {
  }
}

// splitmix64's finalizer over a ^ b: distinct (seed, noise seed, step) give unrelated streams.
uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void sleep_ms(double ms) {
  if (ms > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
}

}  // namespace

void FaultInjector::at_step_start(int64_t step) const {
  if (cfg_.kill_rank == rank_ && cfg_.kill_at == step) ::raise(SIGKILL);
}

void FaultInjector::on_batch(int64_t step, int64_t* tokens, int64_t n) const {
  if (cfg_.corrupt_batch_at != step) return;
  const int64_t first = tokens[0];
  std::fill(tokens, tokens + n, first);
}

void FaultInjector::on_loss(int64_t step, torch::Tensor& loss, torch::Tensor& train_loss) const {
  if (cfg_.nonfinite_at != step) return;
  loss = loss * std::numeric_limits<float>::quiet_NaN();
  train_loss = loss;
}

workloads::AttentionKernel FaultInjector::attention(workloads::AttentionKernel kernel) const {
  if (cfg_.logit_scale_drift == 0) return kernel;
  const double s = 1.0 + cfg_.logit_scale_drift;
  return [kernel = std::move(kernel), s](const torch::Tensor& q, const torch::Tensor& k,
                                         const torch::Tensor& v) {
    // (B, H, T, hd): logits (q s) k^T = s (q k^T). The product is taken in fp32 and rounded once
    // to q's dtype: a bf16 tensor times a scalar rounds the scalar to bf16 first (1.005 and 1.01
    // both become 1.0078125, 1.0025 becomes 1), and the planted drift would not be the stated one.
    return kernel((q.to(torch::kFloat) * s).to(q.scalar_type()), k, v);
  };
}

void FaultInjector::on_params(int64_t step, variants::Sharding& params) const {
  if (cfg_.weight_rounding_noise <= 0) return;
  // One stream per (run seed, noise seed, step): the envelope's runs differ only in noise_seed.
  params.perturb_params(
      cfg_.weight_rounding_noise,
      mix(mix(seed_, static_cast<uint64_t>(cfg_.noise_seed)), static_cast<uint64_t>(step)));
}

void FaultInjector::on_grads(int64_t step, variants::Sharding& grads) const {
  if (cfg_.weight_rounding_noise > 0) grads.restore_params();
  if (cfg_.grad_blowup_at != step) return;
  // An exploding gradient: noise far above the gradient's own scale, in a random direction.
  auto sq = grads.unit_grad_norms_sq();
  double norm = 0;
  for (double v : sq) norm += v;
  const double rms = std::sqrt(norm / static_cast<double>(grads.padded_numel()));
  grads.perturb_grads(1e3 * std::max(rms, 1e-8), seed_ + static_cast<uint64_t>(step));
}

void FaultInjector::delay(int64_t step, int64_t step_started_ns) const {
  if (cfg_.stalls_at(step)) sleep_ms(static_cast<double>(cfg_.stall_ms));
  if (cfg_.stall_rank == rank_ && cfg_.stall_at == step)
    sleep_ms(static_cast<double>(cfg_.stall_ms));
  if (cfg_.slowdown_pct > 0) {
    const double so_far = std::chrono::duration<double, std::milli>(
                              std::chrono::nanoseconds(util::steady_now_ns() - step_started_ns))
                              .count();
    spin_ms(so_far * cfg_.slowdown_pct / 100.0);
  }
}

std::string FaultInjector::nonfinite_note(int64_t step) const {
  return cfg_.nonfinite_at == step ? " (injected: faults.nonfinite_at)" : "";
}

void FaultInjector::before_step(int64_t step, StepRecord& rec) {
  rec.lr = lr(step, rec.lr);
  at_step_start(step);
}

void FaultInjector::on_phase(Phase phase, Edge edge, StepView& v) {
  if (edge == Edge::End && phase == Phase::Data)
    on_batch(v.step, v.tokens.data_ptr<int64_t>(), v.tokens.numel());
  else if (edge == Edge::Begin && phase == Phase::Forward && v.micro == 0)
    on_params(v.step, *v.sharding);
  else if (edge == Edge::End && phase == Phase::Forward)
    on_loss(v.step, *v.reported, *v.train);
  else if (edge == Edge::Begin && phase == Phase::Optimizer)
    on_grads(v.step, *v.sharding);
  else if (edge == Edge::Begin && phase == Phase::Other)
    delay(v.step, v.started_ns);  // part of the step
}

void FaultInjector::finish(TrainOutcome& out) {
  if (out.status == RunStatus::Nonfinite) out.failure += nonfinite_note(out.failed_step);
}

}  // namespace lockstep::train
