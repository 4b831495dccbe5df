// Every kernel of the fused_cpu example plugin against LibTorch's own op, forward and backward,
// in fp32 and under bf16 autocast (llm.c's dev/cuda discipline: a kernel is checked before it is
// timed). The plugin is loaded through the real loader and its kernels taken from the registry,
// as a run takes them; the references are the built-in entries.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include "harness/kernels/registry.h"
#include "kernel_check.h"

using namespace lockstep;
using torch::Tensor;
using lockstep::testing::rel_err;

namespace {

class FusedCpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry::install();
    registry::Catalog::global().load_plugin(FUSED_CPU_SO);
    at::set_num_threads(1);
  }
};

// RAII bf16 autocast on CPU, as the trainer's precision scope.
struct Bf16Autocast {
  explicit Bf16Autocast(bool on) : on_(on) {
    if (on_) {
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    }
  }
  ~Bf16Autocast() {
    if (on_) {
      at::autocast::set_cpu_enabled(false);
      at::autocast::clear_cache();
    }
  }
  bool on_;
};

// Tolerances: fp32 kernels agree to a few ulp of the largest value; bf16 results are rounded to
// 8 significant bits (2^-8 = 0.4%), and a value one rounding apart from LibTorch's shows as that.
constexpr double kF32 = 1e-5, kBF16 = 1.6e-2;

}  // namespace

TEST_F(FusedCpu, BiasGeluMatchesLibTorchForwardAndBackward) {
  auto ours = registry::activation_kernel("cpu_bias_gelu", FUSED_CPU_SO);
  auto ref = registry::activation_kernel("gelu");
  torch::manual_seed(1);
  const auto x0 = torch::randn({300, 64}), w0 = torch::randn({256, 64}) * 0.2,
             b0 = torch::randn({256}), dy = torch::randn({300, 256});  // rows not a multiple of 64
  for (bool bf16 : {false, true}) {
    auto a = lockstep::testing::leaves({x0, w0, b0}), r = lockstep::testing::leaves({x0, w0, b0});
    Tensor ya, yr;
    {
      Bf16Autocast ac(bf16);
      ya = ours(a[0], a[1], a[2]);
      yr = ref(r[0], r[1], r[2]);
    }
    ASSERT_EQ(ya.scalar_type(), yr.scalar_type());
    const double tol = bf16 ? kBF16 : kF32;
    EXPECT_LT(rel_err(ya, yr), tol) << "forward, bf16 " << bf16;
    ya.backward(dy.to(ya.scalar_type()));
    yr.backward(dy.to(yr.scalar_type()));
    for (int i = 0; i < 3; ++i)
      EXPECT_LT(rel_err(a[i].grad(), r[i].grad()), tol) << "grad " << i << ", bf16 " << bf16;
  }
}

TEST_F(FusedCpu, LayerNormMatchesLibTorchForwardAndBackward) {
  auto ours = registry::layer_norm_kernel("cpu_layer_norm", FUSED_CPU_SO);
  auto ref = registry::layer_norm_kernel("layer_norm");
  torch::manual_seed(2);
  const auto x0 = torch::randn({5, 37, 136}) * 3 + 1, w0 = torch::randn({136}),
             b0 = torch::randn({136}), dy = torch::randn({5, 37, 136});  // C not a multiple of 16
  for (bool bf16 : {false, true}) {
    auto a = lockstep::testing::leaves({x0, w0, b0}), r = lockstep::testing::leaves({x0, w0, b0});
    Tensor ya, yr;
    {
      Bf16Autocast ac(bf16);
      ya = ours(a[0], a[1], a[2], 1e-5);
      yr = ref(r[0], r[1], r[2], 1e-5);
    }
    // Under bf16 autocast ours writes bf16 (what the next GEMM would cast to); LibTorch's is fp32.
    EXPECT_EQ(ya.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    const double tol = bf16 ? kBF16 : kF32;
    EXPECT_LT(rel_err(ya, yr), tol) << "forward, bf16 " << bf16;
    // The gradient arrives in each output's dtype; the bf16 one is the same values rounded.
    ya.backward(dy.to(ya.scalar_type()));
    yr.backward(dy.to(ya.scalar_type()).to(yr.scalar_type()));
    for (int i = 0; i < 3; ++i)
      EXPECT_LT(rel_err(a[i].grad(), r[i].grad()), kF32 * 10) << "grad " << i << ", bf16 " << bf16;
  }
}

TEST_F(FusedCpu, CrossEntropyMatchesLibTorchForwardAndBackward) {
  auto ours = registry::loss_kernel("cpu_cross_entropy", FUSED_CPU_SO);
  auto ref = registry::loss_kernel("cross_entropy");
  torch::manual_seed(3);
  const auto logits0 = torch::randn({200, 520}) * 4, targets = torch::randint(0, 520, {200});
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    auto a = lockstep::testing::leaves({logits0.to(dtype)}), r = lockstep::testing::leaves({logits0.to(dtype)});
    auto la = ours(a[0], targets), lr = ref(r[0], targets);
    EXPECT_EQ(la.scalar_type(), torch::kFloat);
    EXPECT_EQ(la.dim(), 0);
    EXPECT_NEAR(la.item<double>(), lr.item<double>(), 1e-5 * lr.item<double>());
    (la * 3.0).backward();
    (lr * 3.0).backward();
    EXPECT_EQ(a[0].grad().scalar_type(), dtype);
    EXPECT_LT(rel_err(a[0].grad(), r[0].grad()), dtype == torch::kFloat ? kF32 : kBF16);
  }
}

// Causal attention: the blocked AVX512-BF16 kernel for bf16 at both workload shapes (tiny: T 64,
// hd 32; d256: T 128, hd 64), LibTorch's math for fp32 (what it falls back to), against the
// built-in "math" kernel.
TEST_F(FusedCpu, CausalAttentionMatchesLibTorchForwardAndBackward) {
  auto ours = registry::attention_kernel("cpu_causal", FUSED_CPU_SO);
  auto ref = registry::attention_kernel("math");
  torch::manual_seed(5);
  for (auto shape : {std::vector<int64_t>{2, 3, 64, 32}, std::vector<int64_t>{2, 2, 128, 64}})
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const auto q0 = torch::randn(shape), k0 = torch::randn(shape), v0 = torch::randn(shape),
                 dy = torch::randn(shape).to(dtype);
      auto a = lockstep::testing::leaves({q0.to(dtype), k0.to(dtype), v0.to(dtype)}),
           r = lockstep::testing::leaves({q0.to(dtype), k0.to(dtype), v0.to(dtype)});
      auto ya = ours(a[0], a[1], a[2]), yr = ref(r[0], r[1], r[2]);
      ASSERT_EQ(ya.scalar_type(), dtype);
      ASSERT_EQ(ya.sizes(), q0.sizes());
      const double tol = dtype == torch::kFloat ? kF32 : kBF16;
      EXPECT_LT(rel_err(ya, yr), tol) << "forward " << shape[2] << " " << dtype;
      // Backward as the model calls it on one shape (the output transposed back to (B, T, C)),
      // with a plain (B, H, T, hd) gradient on the other.
      if (shape[2] == 128) {
        auto tok = [&](const Tensor& y) {
          return y.transpose(1, 2).contiguous().view({shape[0], shape[2], shape[1] * shape[3]});
        };
        auto g = dy.transpose(1, 2).contiguous().view({shape[0], shape[2], shape[1] * shape[3]});
        tok(ya).backward(g);
        tok(yr).backward(g);
      } else {
        ya.backward(dy);
        yr.backward(dy);
      }
      for (int i = 0; i < 3; ++i)
        EXPECT_LT(rel_err(a[i].grad(), r[i].grad()), tol)
            << "grad " << i << " " << shape[2] << " " << dtype;
    }
}

// The single-pass AdamW rounds exactly as the built-in does: bitwise equal, over several steps,
// with a weight-decay mask of runs and a length that is not a multiple of the vector width.
TEST_F(FusedCpu, AdamWIsBitwiseTheBuiltIn) {
  auto ours = registry::optimizer_kernel("cpu_adamw", FUSED_CPU_SO);
  auto ref = registry::optimizer_kernel("adamw");
  torch::manual_seed(4);
  const int64_t n = 10007;
  auto decay = torch::ones({n});
  decay.narrow(0, 100, 57).zero_();
  decay.narrow(0, 9000, 1007).zero_();
  auto p1 = torch::randn({n}), m1 = torch::zeros({n}), v1 = torch::zeros({n});
  auto p2 = p1.clone(), m2 = m1.clone(), v2 = v1.clone(), p0 = p1.clone();
  for (int64_t t = 1; t <= 5; ++t) {
    auto g = torch::randn({n});
    plugin::AdamWStep s{3e-3 * static_cast<double>(t), t, 0.9, 0.95, 1e-8, 0.1};
    ours(p1, g, m1, v1, decay, s);
    ref(p2, g, m2, v2, decay, s);
  }
  EXPECT_TRUE(torch::equal(p1, p2));
  EXPECT_TRUE(torch::equal(m1, m2));
  EXPECT_TRUE(torch::equal(v1, v2));
  EXPECT_FALSE(torch::equal(p1, p0));  // and it did update
}
