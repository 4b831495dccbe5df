// The fused_cuda example plugin's kernels (examples/plugins/fused_cuda) against LibTorch's own ops
// on the GPU, forward and backward, in fp32 and under bf16 autocast, as plugin_kernels_test.cpp
// checks the CPU ones. The plugin is loaded through the real loader and its kernels taken from the
// registry, as a run takes them; the references are the built-in entries. Built only against a
// CUDA LibTorch (tests/CMakeLists.txt, label "cuda"); the GPU tests skip without a CUDA device and
// run in bench/gpu-check.sh.
#include <gtest/gtest.h>

#include "harness/compat/torch_compat.h"
#include "harness/kernels/registry.h"
#include "kernel_check.h"

// CMake defines it (the plugin's build folder); the CUDA header check compiles this file without.
#ifndef FUSED_CUDA_SO
#define FUSED_CUDA_SO ""
#endif

using namespace lockstep;
using torch::Tensor;
using lockstep::testing::rel_err;

namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

class FusedCuda : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry::install();
    registry::Catalog::global().load_plugin(FUSED_CUDA_SO);
  }
};

// RAII bf16 autocast on CUDA, as the trainer's precision scope.
struct Bf16Autocast {
  explicit Bf16Autocast(bool on) : on_(on) {
    if (on_) compat::set_autocast(at::kCUDA, true, at::kBFloat16);
  }
  ~Bf16Autocast() {
    if (on_) {
      compat::set_autocast(at::kCUDA, false, at::kBFloat16);
      at::autocast::clear_cache();
    }
  }
  bool on_;
};

// fp32: a few ulp of the largest value; bf16: 8 significant bits (2^-8 = 0.4%), and a value one
// rounding apart from LibTorch's shows as that.
constexpr double kF32 = 1e-5, kBF16 = 1.6e-2;

}  // namespace

// Shapes off every block size: 1000 rows (7.8 chunks of 128), 200 columns (6.25 warps of 32).
TEST_F(FusedCuda, BiasGeluMatchesLibTorchForwardAndBackward) {
  REQUIRE_CUDA();
  auto ours = registry::activation_kernel("cuda_bias_gelu", FUSED_CUDA_SO);
  auto ref = registry::activation_kernel("gelu");
  torch::manual_seed(1);
  const auto x0 = torch::randn({1000, 64}), w0 = torch::randn({200, 64}) * 0.2,
             b0 = torch::randn({200}), dy = torch::randn({1000, 200}).to(torch::kCUDA);
  for (bool bf16 : {false, true}) {
    auto a = lockstep::testing::leaves({x0, w0, b0}, torch::kCUDA), r = lockstep::testing::leaves({x0, w0, b0}, torch::kCUDA);
    Tensor ya, yr;
    {
      Bf16Autocast ac(bf16);
      ya = ours(a[0], a[1], a[2]);
      yr = ref(r[0], r[1], r[2]);
    }
    ASSERT_EQ(ya.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    ASSERT_EQ(ya.scalar_type(), yr.scalar_type());
    const double tol = bf16 ? kBF16 : kF32;
    EXPECT_LT(rel_err(ya, yr), tol) << "forward, bf16 " << bf16;
    ya.backward(dy.to(ya.scalar_type()));
    yr.backward(dy.to(yr.scalar_type()));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(a[i].grad().defined()) << "grad " << i;
      EXPECT_EQ(a[i].grad().scalar_type(), torch::kFloat) << "grad " << i;
      EXPECT_LT(rel_err(a[i].grad(), r[i].grad()), tol) << "grad " << i << ", bf16 " << bf16;
    }
  }
}

// C = 136 (not a multiple of the warp), rows 5 x 300 (not a multiple of 4 rows or 128-row chunks).
TEST_F(FusedCuda, LayerNormMatchesLibTorchForwardAndBackward) {
  REQUIRE_CUDA();
  auto ours = registry::layer_norm_kernel("cuda_layer_norm", FUSED_CUDA_SO);
  auto ref = registry::layer_norm_kernel("layer_norm");
  torch::manual_seed(2);
  const auto x0 = torch::randn({5, 300, 136}) * 3 + 1, w0 = torch::randn({136}),
             b0 = torch::randn({136}), dy = torch::randn({5, 300, 136}).to(torch::kCUDA);
  for (bool bf16 : {false, true}) {
    auto a = lockstep::testing::leaves({x0, w0, b0}, torch::kCUDA), r = lockstep::testing::leaves({x0, w0, b0}, torch::kCUDA);
    Tensor ya, yr;
    {
      Bf16Autocast ac(bf16);
      ya = ours(a[0], a[1], a[2], 1e-5);
      yr = ref(r[0], r[1], r[2], 1e-5);
    }
    // Under bf16 autocast ours writes bf16 (what the next GEMM casts to); LibTorch's is fp32.
    EXPECT_EQ(ya.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
    EXPECT_EQ(yr.scalar_type(), torch::kFloat);
    EXPECT_LT(rel_err(ya, yr), bf16 ? kBF16 : kF32) << "forward, bf16 " << bf16;
    // The gradient arrives in each output's dtype; the bf16 one is the same values rounded.
    ya.backward(dy.to(ya.scalar_type()));
    yr.backward(dy.to(ya.scalar_type()).to(yr.scalar_type()));
    for (int i = 0; i < 3; ++i)
      EXPECT_LT(rel_err(a[i].grad(), r[i].grad()), kF32 * 10) << "grad " << i << ", bf16 " << bf16;
  }
}

// bf16 storage without autocast (a bf16 model): both kernels read and write bf16, math in fp32.
TEST_F(FusedCuda, Bf16InputsWithoutAutocast) {
  REQUIRE_CUDA();
  auto gelu = registry::activation_kernel("cuda_bias_gelu", FUSED_CUDA_SO);
  auto ln = registry::layer_norm_kernel("cuda_layer_norm", FUSED_CUDA_SO);
  auto gelu_ref = registry::activation_kernel("gelu");
  auto ln_ref = registry::layer_norm_kernel("layer_norm");
  torch::manual_seed(3);
  const auto bf = torch::TensorOptions().dtype(torch::kBFloat16).device(torch::kCUDA);
  const auto x = torch::randn({257, 96}, bf), w = (torch::randn({160, 96}) * 0.2).to(bf),
             b = torch::randn({160}, bf);
  const auto y = gelu(x, w, b);
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  EXPECT_LT(rel_err(y, gelu_ref(x, w, b)), kBF16);
  const auto lw = torch::randn({96}, bf), lb = torch::randn({96}, bf);
  const auto z = ln(x, lw, lb, 1e-5);
  EXPECT_EQ(z.scalar_type(), torch::kBFloat16);
  EXPECT_LT(rel_err(z, ln_ref(x, lw, lb, 1e-5)), kBF16);
}

// The column sums run in a fixed order (no atomics): two runs give the same bits.
TEST_F(FusedCuda, GradientsAreBitwiseReproducible) {
  REQUIRE_CUDA();
  auto gelu = registry::activation_kernel("cuda_bias_gelu", FUSED_CUDA_SO);
  auto ln = registry::layer_norm_kernel("cuda_layer_norm", FUSED_CUDA_SO);
  torch::manual_seed(4);
  const auto x0 = torch::randn({4, 512, 128}), w0 = torch::randn({512, 128}) * 0.1,
             b0 = torch::randn({512}), lw0 = torch::randn({128}), lb0 = torch::randn({128});
  std::vector<std::vector<Tensor>> grads;
  for (int run = 0; run < 2; ++run) {
    auto p = lockstep::testing::leaves({x0, w0, b0, lw0, lb0}, torch::kCUDA);
    Bf16Autocast ac(true);
    const auto h = ln(p[0], p[3], p[4], 1e-5).view({-1, 128});  // (2048, 128)
    gelu(h, p[1], p[2]).to(torch::kFloat).square().sum().backward();
    std::vector<Tensor> g;
    for (const auto& t : p) g.push_back(t.grad().clone());
    grads.push_back(g);
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_TRUE(torch::equal(grads[0][i], grads[1][i])) << "grad " << i;
    EXPECT_GT(grads[0][i].abs().max().item<double>(), 0.0) << "grad " << i;
  }
}

// Inputs the kernels do not take are refused with a one-line reason, never computed on.
TEST_F(FusedCuda, RefusesWhatItDoesNotHandle) {
  auto gelu = registry::activation_kernel("cuda_bias_gelu", FUSED_CUDA_SO);
  auto ln = registry::layer_norm_kernel("cuda_layer_norm", FUSED_CUDA_SO);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("(no error)");
  };
  const auto cpu = torch::randn({8, 16});
  EXPECT_NE(message([&] { gelu(cpu, torch::randn({32, 16}), torch::randn({32})); })
                .find("fused_cuda cuda_bias_gelu: x must be a CUDA tensor, got cpu"),
            std::string::npos);
  EXPECT_NE(message([&] { ln(cpu, torch::ones({16}), torch::zeros({16}), 1e-5); })
                .find("fused_cuda cuda_layer_norm: x must be a CUDA tensor, got cpu"),
            std::string::npos);
  REQUIRE_CUDA();
  const auto f16 = torch::randn({8, 16}, torch::TensorOptions().dtype(torch::kHalf).device(torch::kCUDA));
  EXPECT_NE(message([&] { ln(f16, torch::ones({16}).cuda(), torch::zeros({16}).cuda(), 1e-5); })
                .find("x must be float32 or bfloat16, got Half"),
            std::string::npos);
  const auto strided = torch::randn({16, 8}, torch::TensorOptions().device(torch::kCUDA)).t();  // (8, 16), not contiguous
  EXPECT_NE(message([&] { ln(strided, torch::ones({16}).cuda(), torch::zeros({16}).cuda(), 1e-5); })
                .find("x must be contiguous"),
            std::string::npos);
}
