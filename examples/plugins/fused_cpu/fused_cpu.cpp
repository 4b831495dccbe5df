// Example Lockstep plugin: fused CPU kernels for the hot spots of a bf16 step on this machine
// (bench/RESULTS.md "Where the step goes"): bias + GELU forward and backward with the bias
// gradient folded in, LayerNorm that writes the autocast dtype itself (no separate bf16 cast
// pass either way), cross-entropy straight on the bf16 logits, AdamW in one AVX512 pass, and a
// causal attention that computes only the blocks at or below the diagonal.
//
// Each kernel is a torch::autograd::Function over the raw loops in kernels.cpp; anything they do
// not cover (another device or dtype) falls back to LibTorch's own ops, so an entry is never
// wrong, only sometimes not faster. tests/numerics/plugin_kernels_test.cpp checks every kernel against
// LibTorch's op, forward and backward, before bench/mfu_bench.cpp times them.
#include <lockstep/plugin.h>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels.h"

// The plugin's helpers, in a namespace of its own: internal to this file, and distinct from every
// other plugin's (tools/check-torch2-api.sh compiles all the example plugins in one unit).
namespace fused_cpu_plugin {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;
using fused_cpu::Dt;

constexpr int64_t kRowChunk = 64;  // rows per task: fixed, so results do not depend on threads

bool supported(const Tensor& t) {
  return t.device().is_cpu() &&
         (t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kBFloat16);
}
Dt dt_of(const Tensor& t) {
  return t.scalar_type() == torch::kBFloat16 ? Dt::BF16 : Dt::F32;
}
// The dtype LibTorch's autocast would compute a GEMM in here (fp32 when autocast is off).
torch::ScalarType autocast_dtype() {
  return at::autocast::is_cpu_enabled() ? at::autocast::get_autocast_cpu_dtype() : torch::kFloat;
}

// Row chunks [k * kRowChunk, ...) in parallel; `partial` (chunks x width, fp32) receives each
// chunk's contribution to a sum over rows, added up afterwards in chunk order.
template <typename F>
void for_row_chunks(int64_t rows, F&& f) {
  const int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
  at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) f(c, c * kRowChunk, std::min(rows, (c + 1) * kRowChunk));
  });
}
int64_t n_chunks(int64_t rows) {
  return (rows + kRowChunk - 1) / kRowChunk;
}

// ---- activation: gelu(x W^T + b) -------------------------------------------------------------

struct BiasGelu : torch::autograd::Function<BiasGelu> {
  // h (N, M) = x W^T without the bias, in the GEMM's dtype; bias (M) fp32 -> gelu(h + bias).
  // Saves gelu'(h + bias) (in h's dtype: rounded to bf16 under bf16 autocast) for the backward.
  static Tensor forward(AutogradContext* ctx, const Tensor& h, const Tensor& bias) {
    RECORD_FUNCTION("fused_cpu::bias_gelu", std::vector<c10::IValue>());
    auto y = torch::empty_like(h), g = torch::empty_like(h);  // (N, M)
    const int64_t N = h.size(0), M = h.size(1);
    const auto b = bias.contiguous();
    for_row_chunks(N, [&](int64_t, int64_t r0, int64_t r1) {
      fused_cpu::bias_gelu_forward(h.data_ptr(), b.data_ptr<float>(), y.data_ptr(), g.data_ptr(),
                                   dt_of(h), r0, r1, M);
    });
    ctx->save_for_backward({g});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto g = ctx->get_saved_variables()[0];
    const auto dy = grads[0].to(g.scalar_type()).contiguous();  // (N, M)
    const int64_t N = g.size(0), M = g.size(1);
    auto du = torch::empty_like(g);
    auto partial = torch::zeros({n_chunks(N), M}, torch::kFloat);  // bias gradient per chunk
    for_row_chunks(N, [&](int64_t c, int64_t r0, int64_t r1) {
      fused_cpu::bias_gelu_backward(dy.data_ptr(), g.data_ptr(), du.data_ptr(),
                                    partial[c].data_ptr<float>(), dt_of(g), r0, r1, M);
    });
    return {du, partial.sum(0)};
  }
};

Tensor bias_gelu(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (!supported(x) || !w.device().is_cpu() || b.scalar_type() != torch::kFloat)
    return torch::gelu(torch::linear(x, w, b));  // not ours: LibTorch's
  auto h = torch::linear(x, w);  // (N, 4C), the GEMM without its bias (autocast: bf16)
  if (!supported(h)) return torch::gelu(h + b);
  return BiasGelu::apply(h.contiguous(), b);
}

// ---- LayerNorm ---------------------------------------------------------------------------------

struct LayerNorm : torch::autograd::Function<LayerNorm> {
  // x (rows, C) fp32 -> (rows, C) in `out` dtype; saves mean and rstd per row.
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w, const Tensor& b,
                        double eps, bool out_bf16) {
    RECORD_FUNCTION("fused_cpu::layer_norm", std::vector<c10::IValue>());
    const int64_t C = x.size(-1), rows = x.numel() / C;
    auto y = torch::empty(x.sizes(), x.options().dtype(out_bf16 ? torch::kBFloat16 : torch::kFloat));
    auto mean = torch::empty({rows}, x.options()), rstd = torch::empty({rows}, x.options());
    for_row_chunks(rows, [&](int64_t, int64_t r0, int64_t r1) {
      fused_cpu::layer_norm_forward(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                    y.data_ptr(), dt_of(y), mean.data_ptr<float>(),
                                    rstd.data_ptr<float>(), static_cast<float>(eps), r0, r1, C);
    });
    ctx->save_for_backward({x, w, mean, rstd});
    return y;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto s = ctx->get_saved_variables();
    const auto &x = s[0], &w = s[1], &mean = s[2], &rstd = s[3];
    auto dy = grads[0];
    if (!supported(dy)) dy = dy.to(torch::kFloat);
    dy = dy.contiguous();
    const int64_t C = x.size(-1), rows = x.numel() / C;
    auto dx = torch::empty_like(x);
    auto pw = torch::zeros({n_chunks(rows), C}, torch::kFloat);
    auto pb = torch::zeros({n_chunks(rows), C}, torch::kFloat);
    for_row_chunks(rows, [&](int64_t c, int64_t r0, int64_t r1) {
      fused_cpu::layer_norm_backward(dy.data_ptr(), dt_of(dy), x.data_ptr<float>(),
                                     w.data_ptr<float>(), mean.data_ptr<float>(),
                                     rstd.data_ptr<float>(), dx.data_ptr<float>(),
                                     pw[c].data_ptr<float>(), pb[c].data_ptr<float>(), r0, r1, C);
    });
    return {dx, pw.sum(0), pb.sum(0), Tensor(), Tensor()};
  }
};

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat ||
      w.scalar_type() != torch::kFloat || b.scalar_type() != torch::kFloat)
    return torch::layer_norm(x, {x.size(-1)}, w, b, eps);
  // Under bf16 autocast the next GEMM would cast this output to bf16 anyway: write bf16 now.
  return LayerNorm::apply(x.contiguous(), w.contiguous(), b.contiguous(), eps,
                          autocast_dtype() == torch::kBFloat16);
}

// ---- cross-entropy -----------------------------------------------------------------------------

struct CrossEntropy : torch::autograd::Function<CrossEntropy> {
  // logits (N, V) fp32 or bf16, targets (N) int64 -> mean loss, fp32 ().
  static Tensor forward(AutogradContext* ctx, const Tensor& logits, const Tensor& targets) {
    RECORD_FUNCTION("fused_cpu::cross_entropy", std::vector<c10::IValue>());
    const int64_t N = logits.size(0), V = logits.size(1);
    auto lse = torch::empty({N}, logits.options().dtype(torch::kFloat));
    auto partial = std::vector<double>(static_cast<size_t>(n_chunks(N)));
    for_row_chunks(N, [&](int64_t c, int64_t r0, int64_t r1) {
      partial[static_cast<size_t>(c)] =
          fused_cpu::cross_entropy_forward(logits.data_ptr(), dt_of(logits),
                                           targets.data_ptr<int64_t>(), lse.data_ptr<float>(), r0,
                                           r1, V);
    });
    double total = 0;
    for (double p : partial) total += p;
    ctx->save_for_backward({logits, targets, lse});
    return torch::full({}, static_cast<float>(total / static_cast<double>(N)),
                       logits.options().dtype(torch::kFloat));
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto s = ctx->get_saved_variables();
    const auto &logits = s[0], &targets = s[1], &lse = s[2];
    const int64_t N = logits.size(0), V = logits.size(1);
    const float scale = grads[0].item<float>() / static_cast<float>(N);
    auto dl = torch::empty_like(logits);
    for_row_chunks(N, [&](int64_t, int64_t r0, int64_t r1) {
      fused_cpu::cross_entropy_backward(logits.data_ptr(), dt_of(logits),
                                        targets.data_ptr<int64_t>(), lse.data_ptr<float>(), scale,
                                        dl.data_ptr(), r0, r1, V);
    });
    return {dl, Tensor()};
  }
};

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  if (!supported(logits) || logits.dim() != 2 || targets.scalar_type() != torch::kLong)
    return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), targets);
  return CrossEntropy::apply(logits.contiguous(), targets.contiguous());
}

// ---- causal attention -------------------------------------------------------------------------

// LibTorch's own causal attention (the math the kernel computes), for what the kernel skips.
Tensor attention_reference(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t T = q.size(2);
  auto mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(), q.options()).triu(1);
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(3)));
  return torch::matmul(torch::softmax(att + mask, -1), v);  // (B, H, T, hd)
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  // q, k, v (B, H, T, hd) bf16, contiguous -> (B, H, T, hd); saves the softmax P (B, H, T, T).
  // The output is written token-major, (B, T, H, hd) in memory, and returned as its (B, H, T, hd)
  // view: the model's transpose back to (B, T, C) is then free, and so is its backward.
  static Tensor forward(AutogradContext* ctx, const Tensor& q, const Tensor& k, const Tensor& v) {
    RECORD_FUNCTION("fused_cpu::causal_attention", std::vector<c10::IValue>());
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
    auto o = torch::empty({B, T, H, d}, q.options()).transpose(1, 2);  // (B, H, T, hd) view
    auto p = torch::empty({B, H, T, T}, q.options());
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    auto u16 = [](const Tensor& t) { return static_cast<uint16_t*>(t.data_ptr()); };
    at::parallel_for(0, B * H, 1, [&](int64_t h0, int64_t h1) {
      for (int64_t bh = h0; bh < h1; ++bh) {
        const int64_t b = bh / H, h = bh % H;
        fused_cpu::causal_attention_forward(u16(q) + bh * T * d, u16(k) + bh * T * d,
                                            u16(v) + bh * T * d, u16(o) + b * T * H * d + h * d,
                                            H * d, u16(p) + bh * T * T, T, d, scale);
      }
    });
    ctx->save_for_backward({q, k, v, o, p});
    return o;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    RECORD_FUNCTION("fused_cpu::causal_attention_backward", std::vector<c10::IValue>());
    auto s = ctx->get_saved_variables();
    const auto &q = s[0], &k = s[1], &v = s[2], &o = s[3], &p = s[4];
    const int64_t B = q.size(0), H = q.size(1), T = q.size(2), d = q.size(3);
    // The gradient in the output's token-major layout (what the model's transpose hands back),
    // else made so.
    auto dout = grads[0].to(torch::kBFloat16);
    if (!dout.transpose(1, 2).is_contiguous()) dout = dout.transpose(1, 2).contiguous().transpose(1, 2);
    auto dq = torch::empty_like(q), dk = torch::empty_like(k), dv = torch::empty_like(v);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
    auto u16 = [](const Tensor& t) { return static_cast<uint16_t*>(t.data_ptr()); };
    at::parallel_for(0, B * H, 1, [&](int64_t h0, int64_t h1) {
      for (int64_t bh = h0; bh < h1; ++bh) {
        const int64_t b = bh / H, h = bh % H, tok = b * T * H * d + h * d;
        fused_cpu::causal_attention_backward(
            u16(q) + bh * T * d, u16(k) + bh * T * d, u16(v) + bh * T * d, u16(o) + tok, H * d,
            u16(p) + bh * T * T, u16(dout) + tok, H * d, u16(dq) + bh * T * d,
            u16(dk) + bh * T * d, u16(dv) + bh * T * d, T, d, scale);
      }
    });
    return {dq, dk, dv};
  }
};

Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const bool ours = q.device().is_cpu() && q.scalar_type() == torch::kBFloat16 &&
                    k.scalar_type() == torch::kBFloat16 && v.scalar_type() == torch::kBFloat16 &&
                    q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes() &&
                    fused_cpu::attention_supported(q.size(2), q.size(3));
  if (!ours) return attention_reference(q, k, v);
  return CausalAttention::apply(q.contiguous(), k.contiguous(), v.contiguous());
}

// ---- AdamW -------------------------------------------------------------------------------------

// The weight-decay mask is constant over long runs (1 on matrices, 0 on biases and LayerNorm):
// read it once per mask buffer as runs, instead of a fourth input stream on every step.
struct Runs {
  std::vector<int64_t> start;
  std::vector<float> value;
};
const Runs& runs_of(const Tensor& decay) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int64_t, int64_t>, Runs> cache;
  std::lock_guard<std::mutex> lock(mu);
  // Keyed by buffer, size and version (a mask written in place is read again); a buffer freed and
  // reused for another mask is caught by checking each run's first and last value.
  auto& r = cache[{decay.data_ptr(), decay.numel(), static_cast<int64_t>(decay._version())}];
  const float* d0 = decay.data_ptr<float>();
  for (size_t k = 0; k + 1 < r.start.size(); ++k)
    if (d0[r.start[k]] != r.value[k] || d0[r.start[k + 1] - 1] != r.value[k]) {
      r = Runs{};
      break;
    }
  if (r.start.empty()) {
    const float* d = decay.data_ptr<float>();
    const int64_t n = decay.numel();
    for (int64_t i = 0; i < n; ++i)
      if (i == 0 || d[i] != d[i - 1]) r.start.push_back(i), r.value.push_back(d[i]);
    r.start.push_back(n);
  }
  return r;
}

void adamw(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const Tensor& decay,
           const lockstep::plugin::AdamWStep& s) {
  torch::NoGradGuard no_grad;
  const double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.step));
  const double lr_wd = s.weight_decay > 0 ? s.lr * s.weight_decay : 0.0;
  bool fast = true;
  for (const Tensor* t : std::array<const Tensor*, 5>{&p, &g, &m, &v, &decay})
    fast = fast && t->device().is_cpu() && t->scalar_type() == torch::kFloat &&
           t->is_contiguous() && t->numel() == p.numel();
  if (!fast) {  // the same formula as tensor ops (other devices and layouts)
    m.mul_(s.beta1).add_(g, 1.0 - s.beta1);
    v.mul_(s.beta2).addcmul_(g, g, 1.0 - s.beta2);
    auto denom = v.sqrt().div_(std::sqrt(bc2)).add_(s.eps);
    if (lr_wd > 0) p.addcmul_(p, decay, -lr_wd);
    p.addcdiv_(m, denom, -s.lr / bc1);
    return;
  }
  const auto& r = runs_of(decay);
  fused_cpu::AdamWArgs a{static_cast<float>(s.beta1), static_cast<float>(s.beta2),
                         static_cast<float>(std::sqrt(bc2)), static_cast<float>(s.eps),
                         static_cast<float>(lr_wd), static_cast<float>(s.lr / bc1)};
  fused_cpu::adamw(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(),
                   v.data_ptr<float>(), r.start.data(), r.value.data(),
                   static_cast<int64_t>(r.value.size()), a);
}

}  // namespace
}  // namespace fused_cpu_plugin

extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r) {
  using namespace fused_cpu_plugin;
  using lockstep::plugin::Knob;
  r.attention("cpu_causal", Knob::Approximate, causal_attention,
              "causal attention per head in cache, only the blocks at or below the diagonal, "
              "AVX512-BF16 (bf16; LibTorch's math otherwise)")
      .devices({"cpu"});
  r.activation("cpu_bias_gelu", Knob::Approximate, bias_gelu,
               "bias + exact GELU in one AVX512 pass; backward folds in the bias gradient")
      .devices({"cpu"});
  r.layer_norm("cpu_layer_norm", Knob::Approximate, layer_norm,
               "LayerNorm writing the autocast dtype itself (no separate bf16 cast), AVX512")
      .devices({"cpu"});
  r.loss("cpu_cross_entropy", Knob::Approximate, cross_entropy,
         "cross-entropy on the logits as they are (bf16), gradient written in one pass")
      .devices({"cpu"});
  r.optimizer("cpu_adamw", Knob::Exact, adamw,
              "AdamW in one AVX512 pass, the weight-decay mask read as runs (bitwise the "
              "built-in's math)")
      .devices({"cpu"});
}
