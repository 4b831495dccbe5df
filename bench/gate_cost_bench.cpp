// The gate's own cost (issue 36), as ratios to the training it judges, measured side by side in
// one process at a preset's shapes: a training step (forward, backward, AdamW-free SGD update
// through Sharding), the same step with the envelope's weight noise (Sharding::perturb_params
// before the forward, restore_params after the backward: what a `[faults]
// weight_rounding_noise` run adds), a forward with no grad (what a probe runs per batch), and the
// same forward recording every probed tensor (ProbeRecorder: LayerNorm x and output, q, k, v,
// attention and activation outputs, the logits) and taking the sketches. The four alternate round
// by round, so a slow spell of a shared machine lands on all; the table gives medians (wall time,
// all threads) and the ratios the issue sets goals for: a noisy step <= 1.05 x a plain step; a
// probe's time beyond its forwards <= 10% of the forwards.
//
//   ninja -C build gate_cost_bench && build/bench/gate_cost_bench [small|gpt2-124m] [BATCH]
//   [ROUNDS] [THREADS]
// (THREADS: intra-op threads, default 1 as the trainer's run.threads.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/dist/comm.h"
#include "harness/kernels/registry.h"
#include "harness/train/probe/probe.h"
#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"
#include "variants/sharding.h"
#include "workloads/gpt.h"

using namespace lockstep;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  util::ensure_aten_cpu_capability();
  util::ensure_malloc_tuning(argv);
  const std::string preset = argc > 1 ? argv[1] : "small";
  const int64_t B = argc > 2 ? std::stoll(argv[2]) : 1;
  const int rounds = argc > 3 ? std::stoi(argv[3]) : 3;
  at::set_num_threads(argc > 4 ? std::stoi(argv[4]) : 1);  // the trainer's run.threads default
  workloads::ModelConfig m;
  m.preset = preset;
  if (preset == "small") {
    m.d_model = 256, m.n_layers = 4, m.n_heads = 8, m.seq_len = 128, m.vocab_size = 2048;
  } else if (preset == "gpt2-124m") {
    m.d_model = 768, m.n_layers = 12, m.n_heads = 12, m.seq_len = 1024, m.vocab_size = 50304;
  } else {
    std::fprintf(stderr, "usage: gate_cost_bench [small|gpt2-124m] [BATCH] [ROUNDS]\n");
    return 2;
  }
  registry::install();
  torch::manual_seed(1);
  train::ProbeRecorder rec;
  auto kernels =
      train::recording({registry::attention_kernel("math"), registry::activation_kernel("gelu"),
                        registry::layer_norm_kernel("layer_norm")},
                       &rec);
  auto model = workloads::GPT(m, kernels);
  dist::ParallelConfig par;
  par.backend = "auto";
  dist::Comm comm(dist::RankInfo{}, par, torch::Device(torch::kCPU));
  variants::Sharding sh(model, comm, 0, 25.0,
                        [](torch::Tensor& p, const torch::Tensor& g, torch::Tensor&, torch::Tensor&,
                           const torch::Tensor&, double lr, int64_t) { p.add_(g, -lr); });
  const auto x = torch::randint(0, m.vocab_size, {B, m.seq_len});  // (B, T)
  const auto y = torch::randint(0, m.vocab_size, {B, m.seq_len});

  int64_t t = 0;
  auto step = [&](bool noise) {
    sh.begin_step();
    if (noise) sh.perturb_params(std::ldexp(1.0, -8), static_cast<uint64_t>(t));
    auto logits = model->forward(x);  // (B, T, V)
    auto loss =
        torch::nn::functional::cross_entropy(logits.reshape({-1, m.vocab_size}), y.reshape({-1}));
    loss.backward();
    sh.end_backward(true);
    if (noise) sh.restore_params();
    sh.step(1e-4, ++t);
  };
  auto forward = [&](bool probe) {
    torch::NoGradGuard no_grad;
    if (probe) rec.begin_forward(0);
    auto logits = model->forward(x);  // (B, T, V)
    if (probe) {
      rec.add("logits", logits);
      rec.end_forward();
      std::vector<std::string> names;
      rec.take(&names);
    }
  };
  step(false), step(true), forward(false), forward(true);  // warm-up (and the probe's signs)
  std::vector<double> plain, noisy, fwd, probed;
  for (int r = 0; r < rounds; ++r) {
    plain.push_back(seconds([&] { step(false); }));
    noisy.push_back(seconds([&] { step(true); }));
    fwd.push_back(seconds([&] { forward(false); }));
    probed.push_back(seconds([&] { forward(true); }));
  }
  const double s = median(plain), n = median(noisy), f = median(fwd), p = median(probed);
  std::printf("preset %s, batch %lld x %lld tokens, %lld parameters, %d rounds, %d threads\n",
              preset.c_str(), static_cast<long long>(B), static_cast<long long>(m.seq_len),
              static_cast<long long>(m.parameter_count()), rounds, at::get_num_threads());
  std::printf("%-34s %10s %10s\n", "median seconds", "value", "ratio");
  std::printf("%-34s %10.4f %10s\n", "training step", s, "1");
  std::printf("%-34s %10.4f %10.4f  (goal <= 1.05)\n", "step with weight noise", n, n / s);
  std::printf("%-34s %10.4f %10.4f  (of a step)\n", "forward, no grad", f, f / s);
  std::printf("%-34s %10.4f %10.4f  (of a step)\n", "forward recording the probe", p, p / s);
  std::printf("%-34s %10.4f %10.4f  (of the forward; goal <= 0.10)\n", "probe beyond its forward",
              p - f, (p - f) / f);
  return 0;
}
