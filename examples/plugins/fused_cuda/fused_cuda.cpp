// Example Lockstep plugin: fused CUDA kernels (kernels.cu) for two element-wise hot spots of a
// GPT step on a GPU, each with a hand-written backward:
//
//   cuda_bias_gelu   the activation slot, gelu(x W^T + b) (exact erf GELU, as the built-in
//                    "gelu"): the GEMM stays LibTorch's (cuBLAS, bf16 under autocast), the bias
//                    add and the GELU are one kernel in fp32; the backward is one kernel for
//                    du = dy gelu'(h + b) and the bias gradient (a fixed-order column sum), and
//                    LibTorch's linear backward does dx = du W and dW = du^T x (two GEMMs).
//   cuda_layer_norm  the layer_norm slot: one warp per row, mean and rstd in fp32, the output
//                    written in the autocast dtype; the backward is one kernel for dx and one
//                    for the dw, db column sums.
//
// Dtypes: inputs fp32 or bf16 (fp16 and other dtypes are refused: TORCH_CHECK, so the run fails
// with exit 3 naming the slot and the step); all arithmetic and every sum in fp32. Under
// `[precision] compute = "bf16"` (CUDA autocast) the GEMM's output is bf16, so bias + GELU reads
// and writes bf16 (the bias, an fp32 parameter, is read as fp32) and LayerNorm writes bf16, the
// dtype the next GEMM would cast LibTorch's fp32 output to anyway (rounded to nearest even, as
// that cast does: one pass less). Parameter gradients are computed in fp32 (autograd casts them
// to the parameter's dtype).
//
// Knob class: approximate, both. The built-in "gelu" adds the bias inside the GEMM (cuBLAS's
// epilogue, rounded to bf16 under autocast before the GELU); here the bias is added in fp32 after
// the GEMM's output is rounded, and the GELU reads that sum unrounded: the same math, rounded at
// other places, so not bitwise LibTorch's. LayerNorm's two-pass fp32 mean and variance differ
// from LibTorch's Welford update in the last bits, and a warp's sums are ordered differently.
#include <lockstep/plugin.h>

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>

#include "kernels.h"

// The plugin's helpers, in a namespace of its own: internal to this file, and distinct from every
// other plugin's (tools/check-torch2-api.sh compiles all the example plugins in one unit).
namespace fused_cuda_plugin {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;
using fused_cuda::Dt;

// ---- input checks ------------------------------------------------------------------------------

Dt dt_of(const Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? Dt::BF16 : Dt::F32;
}

void check_cuda(const Tensor& t, const char* kernel, const char* what) {
  TORCH_CHECK(t.defined() && t.is_cuda(), "fused_cuda ", kernel, ": ", what,
              " must be a CUDA tensor, got ", t.defined() ? t.device().str() : "undefined");
}
void check_dtype(const Tensor& t, const char* kernel, const char* what) {
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kBFloat16, "fused_cuda ",
              kernel, ": ", what, " must be float32 or bfloat16, got ", t.scalar_type());
}
void check_contiguous(const Tensor& t, const char* kernel, const char* what) {
  TORCH_CHECK(t.is_contiguous(), "fused_cuda ", kernel, ": ", what,
              " must be contiguous (rows with a dense last dimension), got strides ", t.strides());
}
void check_same_device(const Tensor& a, const Tensor& b, const char* kernel, const char* what) {
  TORCH_CHECK(a.device() == b.device(), "fused_cuda ", kernel, ": ", what, " is on ", b.device(),
              ", the input on ", a.device());
}

// The dtype CUDA autocast computes GEMMs in (kFloat when it is off). LibTorch 2.4 made the
// autocast state device-typed; 2.1-2.3 have the CUDA-only calls.
torch::ScalarType cuda_autocast_dtype() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCUDA) ? at::autocast::get_autocast_dtype(at::kCUDA)
                                                       : torch::kFloat;
#else
  return at::autocast::is_enabled() ? at::autocast::get_autocast_gpu_dtype() : torch::kFloat;
#endif
}

int device_index(const Tensor& t) { return t.get_device(); }

// ---- activation: gelu(x W^T + b) ---------------------------------------------------------------

struct BiasGelu : torch::autograd::Function<BiasGelu> {
  // h (N, M) = x W^T, the GEMM without its bias (bf16 under bf16 autocast); bias (M) -> gelu(h +
  // bias) (N, M) in h's dtype. Saves h and the bias: the backward recomputes gelu' from them (no
  // extra activation buffer, one write pass less than saving gelu').
  static Tensor forward(AutogradContext* ctx, const Tensor& h, const Tensor& bias) {
    RECORD_FUNCTION("fused_cuda::bias_gelu", std::vector<c10::IValue>());
    const auto b = bias.to(torch::kFloat).contiguous();  // (M) fp32
    auto y = torch::empty_like(h);                        // (N, M)
    fused_cuda::bias_gelu_forward(h.data_ptr(), b.data_ptr<float>(), y.data_ptr(), dt_of(h),
                                  h.size(0), h.size(1), device_index(h));
    ctx->save_for_backward({h, b});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    RECORD_FUNCTION("fused_cuda::bias_gelu_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    const auto &h = s[0], &b = s[1];
    if (!grads[0].defined()) return {Tensor(), Tensor()};
    const auto dy = grads[0].to(h.scalar_type()).contiguous();  // (N, M)
    const int64_t N = h.size(0), M = h.size(1);
    auto du = torch::empty_like(h);  // (N, M)
    const auto f32 = h.options().dtype(torch::kFloat);
    auto partial = torch::empty({fused_cuda::reduce_chunks(N), M}, f32);
    auto db = torch::empty({M}, f32);
    fused_cuda::bias_gelu_backward(dy.data_ptr(), h.data_ptr(), b.data_ptr<float>(), du.data_ptr(),
                                   partial.data_ptr<float>(), db.data_ptr<float>(), dt_of(h), N, M,
                                   device_index(h));
    return {du, db};  // dh (-> dx, dW through LibTorch's linear backward), db
  }
};

Tensor bias_gelu(const Tensor& x, const Tensor& w, const Tensor& b) {
  constexpr const char* k = "cuda_bias_gelu";
  check_cuda(x, k, "x");
  check_cuda(w, k, "weight");
  check_cuda(b, k, "bias");
  check_same_device(x, w, k, "weight");
  check_same_device(x, b, k, "bias");
  check_dtype(b, k, "bias");
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && b.dim() == 1 && b.size(0) == w.size(0),
              "fused_cuda ", k, ": expected x (N, C), weight (4C, C), bias (4C), got ", x.sizes(),
              ", ", w.sizes(), ", ", b.sizes());
  auto h = torch::linear(x, w);  // (N, 4C): cuBLAS, in the autocast dtype
  check_dtype(h, k, "x W^T (the GEMM's output: the autocast dtype)");
  check_contiguous(h, k, "x W^T");
  return BiasGelu::apply(h, b);
}

// ---- LayerNorm ---------------------------------------------------------------------------------

struct LayerNorm : torch::autograd::Function<LayerNorm> {
  // x (..., C) -> (..., C) in `out`'s dtype; saves x, w (fp32), mean and rstd (rows, fp32).
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, double eps, bool out_bf16) {
    RECORD_FUNCTION("fused_cuda::layer_norm", std::vector<c10::IValue>());
    const int64_t C = x.size(-1), rows = C == 0 ? 0 : x.numel() / C;
    const auto w = weight.to(torch::kFloat).contiguous(), b = bias.to(torch::kFloat).contiguous();
    auto y = torch::empty(x.sizes(), x.options().dtype(out_bf16 ? torch::kBFloat16 : x.scalar_type()));
    const auto f32 = x.options().dtype(torch::kFloat);
    auto mean = torch::empty({rows}, f32), rstd = torch::empty({rows}, f32);
    fused_cuda::layer_norm_forward(x.data_ptr(), dt_of(x), w.data_ptr<float>(), b.data_ptr<float>(),
                                   y.data_ptr(), dt_of(y), mean.data_ptr<float>(),
                                   rstd.data_ptr<float>(), static_cast<float>(eps), rows, C,
                                   device_index(x));
    ctx->save_for_backward({x, w, mean, rstd});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    RECORD_FUNCTION("fused_cuda::layer_norm_backward", std::vector<c10::IValue>());
    const auto s = ctx->get_saved_variables();
    const auto &x = s[0], &w = s[1], &mean = s[2], &rstd = s[3];
    auto dy = grads[0];
    if (!dy.defined()) return {Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
    if (dy.scalar_type() != torch::kFloat && dy.scalar_type() != torch::kBFloat16)
      dy = dy.to(torch::kFloat);
    dy = dy.contiguous();
    const int64_t C = x.size(-1), rows = mean.size(0);
    auto dx = torch::empty_like(x);
    const auto f32 = x.options().dtype(torch::kFloat);
    const int64_t chunks = fused_cuda::reduce_chunks(rows);
    auto pw = torch::empty({chunks, C}, f32), pb = torch::empty({chunks, C}, f32);
    auto dw = torch::empty({C}, f32), db = torch::empty({C}, f32);
    fused_cuda::layer_norm_backward(dy.data_ptr(), dt_of(dy), x.data_ptr(), dt_of(x),
                                    w.data_ptr<float>(), mean.data_ptr<float>(),
                                    rstd.data_ptr<float>(), dx.data_ptr(), pw.data_ptr<float>(),
                                    pb.data_ptr<float>(), dw.data_ptr<float>(),
                                    db.data_ptr<float>(), rows, C, device_index(x));
    return {dx, dw, db, Tensor(), Tensor()};
  }
};

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  constexpr const char* k = "cuda_layer_norm";
  check_cuda(x, k, "x");
  check_cuda(w, k, "weight");
  check_cuda(b, k, "bias");
  check_same_device(x, w, k, "weight");
  check_same_device(x, b, k, "bias");
  check_dtype(x, k, "x");
  check_dtype(w, k, "weight");
  check_dtype(b, k, "bias");
  check_contiguous(x, k, "x");
  TORCH_CHECK(x.dim() >= 1 && w.dim() == 1 && b.dim() == 1 && w.size(0) == x.size(-1) &&
                  b.size(0) == x.size(-1),
              "fused_cuda ", k, ": expected x (..., C), weight (C), bias (C), got ", x.sizes(),
              ", ", w.sizes(), ", ", b.sizes());
  // Under bf16 autocast the next GEMM casts LibTorch's fp32 output to bf16: write bf16 now.
  return LayerNorm::apply(x, w, b, eps, cuda_autocast_dtype() == torch::kBFloat16);
}

}  // namespace
}  // namespace fused_cuda_plugin

extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r) {
  using namespace fused_cuda_plugin;
  using lockstep::plugin::Knob;
  r.activation("cuda_bias_gelu", Knob::Approximate, bias_gelu,
               "LibTorch's GEMM, then bias + exact GELU in one CUDA kernel (fp32 math); the "
               "backward computes GELU' and the bias gradient in one kernel")
      .devices({"cuda"});
  r.layer_norm("cuda_layer_norm", Knob::Approximate, layer_norm,
               "LayerNorm, one warp per row, fp32 statistics, writing the autocast dtype; fused "
               "dx and dw/db backward kernels")
      .devices({"cuda"});
}
