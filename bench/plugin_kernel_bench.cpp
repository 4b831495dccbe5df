// A plugin's kernels against the built-ins, one slot at a time, at the shapes of the d_model-256
// bf16 MFU workload (bench/configs/mfu_d256.toml: N = B*T = 2048 tokens, C = 256, 4C = 1024,
// V = 1024, H = 4 heads of 64): forward + backward per call, under bf16 autocast, one thread.
// Ours and the reference alternate call by call, so a slow spell of a shared machine lands on
// both; the table gives the median per call and the ratio. Times are this thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), not wall time: on a shared machine the time the thread waits for a
// core is not the kernel's (caches and memory bandwidth are still shared). A "GEMM only" row
// per slot times the GEMMs the kernel includes, so the difference is the kernel's own work. (Correctness is checked first, in
// tests/numerics/plugin_kernels_test.cpp; this only times.)
//
//   build/bench/plugin_kernel_bench PLUGIN.so [ROUNDS]
#include <ATen/autocast_mode.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "harness/kernels/registry.h"
#include "harness/util/cpu_capability.h"
#include "harness/util/malloc_tuning.h"

using namespace lockstep;
using torch::Tensor;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double cpu_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

struct Autocast {
  Autocast() {
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  }
  ~Autocast() {
    at::autocast::set_cpu_enabled(false);
    at::autocast::clear_cache();
  }
};

// Times f() (one forward + backward) for ours and ref, alternating, `rounds` times each.
void compare(const char* what, int rounds, const std::function<void()>& ours,
             const std::function<void()>& ref) {
  std::vector<double> a, b;
  for (int i = 0; i < 3; ++i) ours(), ref();  // warm up: allocations, page faults
  for (int i = 0; i < rounds; ++i)
    for (int k = 0; k < 2; ++k) {
      const bool first = (i + k) % 2 == 0;  // A B, B A, ...
      const double t0 = cpu_ms();
      (first ? ours : ref)();
      const double ms = cpu_ms() - t0;
      (first ? a : b).push_back(ms);
    }
  std::printf("%-34s %10.3f %10.3f %8.2fx\n", what, median(a), median(b), median(b) / median(a));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLUGIN.so [ROUNDS]\n", argv[0]);
    return 2;
  }
  // The allocator and LibTorch's kernels as a `lockstep run` has them (docs/run-folder.md "Stable timings").
  util::ensure_aten_cpu_capability();
  util::ensure_malloc_tuning(argv);
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 30;
  at::set_num_threads(1);
  registry::install();
  const std::string so = std::filesystem::absolute(argv[1]).string();
  registry::Catalog::global().load_plugin(so);
  std::vector<registry::ImplInfo> mine;
  for (const auto& e : registry::Catalog::global().entries())
    if (e.origin == so) mine.push_back(e);

  const int64_t N = 2048, C = 256, M = 1024, V = 1024, B = 16, H = 4, T = 128, hd = 64;
  torch::manual_seed(0);
  std::printf("%-34s %10s %10s %9s\n", "kernel (fwd+bwd per call, bf16)", "ours ms", "ref ms",
              "speed-up");
  for (const auto& e : mine) {
    const std::string label = std::string(registry::slot_name(e.slot)) + " " + e.name;
    switch (e.slot) {
      case registry::Slot::Activation: {
        auto ours = registry::activation_kernel(e.name, so), ref = registry::activation_kernel("gelu");
        auto x = torch::randn({N, C}).to(torch::kBFloat16).requires_grad_(true);
        auto w = (torch::randn({M, C}) * 0.05).requires_grad_(true);
        auto b = torch::randn({M}).requires_grad_(true);
        auto dy = torch::randn({N, M}).to(torch::kBFloat16);
        auto run = [&](const plugin::ActivationFn& f) {
          return [&, f] {
            Autocast ac;
            f(x, w, b).backward(dy);
          };
        };
        compare(label.c_str(), rounds, run(ours), run(ref));
        plugin::ActivationFn gemm = [](const Tensor& x, const Tensor& w, const Tensor& b) {
          return torch::linear(x, w, b);
        };
        compare("  GEMM only (linear with bias)", rounds, run(gemm), run(gemm));
        break;
      }
      case registry::Slot::LayerNorm: {
        auto ours = registry::layer_norm_kernel(e.name, so), ref = registry::layer_norm_kernel("layer_norm");
        auto x = torch::randn({B, T, C}).requires_grad_(true);
        auto w = torch::randn({C}).requires_grad_(true), b = torch::randn({C}).requires_grad_(true);
        auto wn = (torch::randn({3 * C, C}) * 0.05);
        // As in the model: the LayerNorm feeds a bf16 GEMM (which casts an fp32 output first).
        auto run = [&](const plugin::LayerNormFn& f) {
          return [&, f] {
            Autocast ac;
            auto y = torch::linear(f(x, w, b, 1e-5).view({N, C}), wn);
            y.backward(torch::ones_like(y));
          };
        };
        compare((label + " (+ next GEMM)").c_str(), rounds, run(ours), run(ref));
        plugin::LayerNormFn none = [](const Tensor& x, const Tensor&, const Tensor&, double) {
          return x;
        };
        compare("  GEMM only", rounds, run(none), run(none));
        break;
      }
      case registry::Slot::Loss: {
        auto ours = registry::loss_kernel(e.name, so), ref = registry::loss_kernel("cross_entropy");
        auto logits = torch::randn({N, V}).to(torch::kBFloat16).requires_grad_(true);
        auto t = torch::randint(0, V, {N});
        auto run = [&](const plugin::LossFn& f) {
          return [&, f] {
            Autocast ac;
            f(logits, t).backward();
          };
        };
        compare(label.c_str(), rounds, run(ours), run(ref));
        break;
      }
      case registry::Slot::Optimizer: {
        auto ours = registry::optimizer_kernel(e.name, so), ref = registry::optimizer_kernel("adamw");
        const int64_t n = 3500000;  // ~ the d256 model's parameters
        auto p = torch::randn({n}), g = torch::randn({n}), m = torch::zeros({n}),
             v = torch::zeros({n}), decay = torch::ones({n});
        decay.narrow(0, 0, 5000).zero_();
        int64_t t = 0;
        auto run = [&](const plugin::OptimizerFn& f) {
          return [&, f] { f(p, g, m, v, decay, {1e-3, ++t, 0.9, 0.95, 1e-8, 0.1}); };
        };
        compare(label.c_str(), rounds, run(ours), run(ref));
        break;
      }
      case registry::Slot::Attention: {
        auto ours = registry::attention_kernel(e.name, so), ref = registry::attention_kernel("math");
        auto q = torch::randn({B, H, T, hd}).to(torch::kBFloat16).requires_grad_(true);
        auto k = torch::randn({B, H, T, hd}).to(torch::kBFloat16).requires_grad_(true);
        auto v = torch::randn({B, H, T, hd}).to(torch::kBFloat16).requires_grad_(true);
        auto dy = torch::randn({B, T, H * hd}).to(torch::kBFloat16);
        // As the model calls it: the output transposed back to (B, T, C).
        auto run = [&](const plugin::AttentionFn& f) {
          return [&, f] {
            Autocast ac;
            f(q, k, v).transpose(1, 2).contiguous().view({B, T, H * hd}).backward(dy);
          };
        };
        compare((label + " (+ to (B, T, C))").c_str(), rounds, run(ours), run(ref));
        break;
      }
    }
  }
  std::printf("(median of %d alternating calls each, 1 thread)\n", rounds);
  return 0;
}
