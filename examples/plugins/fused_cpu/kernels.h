// The fused CPU kernels of the example plugin, on raw buffers (no LibTorch here: fused_cpu.cpp is
// the glue that makes them autograd functions). Each kernel is one pass over memory where
// LibTorch's eager ops make several, with an AVX512 path (chosen at run time) and a portable one.
//
// Storage types: float, or bf16 as uint16_t (round to nearest even, as c10::BFloat16). Math is
// always fp32. Row ranges [r0, r1) let the glue split rows over threads; reductions over rows
// (bias and LayerNorm parameter gradients) go into per-call partial buffers the glue sums in a
// fixed order, so results do not depend on the thread count.
#pragma once

#include <cstdint>

namespace fused_cpu {

enum class Dt { F32, BF16 };

// u = h + b; y = gelu(u) = u/2 (1 + erf(u / sqrt 2)), and g = gelu'(u), which the backward reads
// instead of recomputing erf and exp. h, y, g: (rows, M) of `dt`; b: (M) fp32.
void bias_gelu_forward(const void* h, const float* b, void* y, void* g, Dt dt, int64_t r0,
                       int64_t r1, int64_t M);
// du = dy * g (dt); db[j] += sum over the rows of du (fp32, M).
void bias_gelu_backward(const void* dy, const void* g, void* du, float* db, Dt dt, int64_t r0,
                        int64_t r1, int64_t M);

// LayerNorm of fp32 rows x (rows, C) into y (ydt), saving mean and rstd per row.
void layer_norm_forward(const float* x, const float* w, const float* b, void* y, Dt ydt,
                        float* mean, float* rstd, float eps, int64_t r0, int64_t r1, int64_t C);
// dx (fp32) from dy (dydt); dw, db += this range's parameter gradients (fp32, C).
void layer_norm_backward(const void* dy, Dt dydt, const float* x, const float* w,
                         const float* mean, const float* rstd, float* dx, float* dw, float* db,
                         int64_t r0, int64_t r1, int64_t C);

// Cross-entropy rows: lse[i] = logsumexp(logits[i]); returns the sum over rows of
// lse[i] - logits[i][target[i]] (double).
double cross_entropy_forward(const void* logits, Dt dt, const int64_t* target, float* lse,
                             int64_t r0, int64_t r1, int64_t V);
// dlogits[i][j] = (exp(logits[i][j] - lse[i]) - [j == target[i]]) * scale, in `dt`.
void cross_entropy_backward(const void* logits, Dt dt, const int64_t* target, const float* lse,
                            float scale, void* dlogits, int64_t r0, int64_t r1, int64_t V);

// AdamW on [i0, i1) of flat fp32 buffers, in the built-in's order of operations (bitwise equal
// results): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g g; d = sqrt(v) / sqrt_bc2 + eps;
// p = p - lr_wd decay p; p = p - step m / d. `decay` is constant on each of `n_runs` runs
// [run_start[k], run_start[k+1]) with value run_value[k].
struct AdamWArgs {
  float b1, b2, sqrt_bc2, eps, lr_wd, step;
};
void adamw(float* p, const float* g, float* m, float* v, const int64_t* run_start,
           const float* run_value, int64_t n_runs, const AdamWArgs& a);

// Causal attention of one (batch, head) in bf16 (attention.cpp): q, k, v (T, d) row-major; o
// (T, d) with row stride ldo (the heads of one token side by side: ldo = H d); p (T, T) the
// softmax, saved for the backward (zero above the diagonal); scale = 1 / sqrt(d). The backward
// reads o and the output gradient dout with their row strides and writes dq, dk, dv (T, d).
// Only where attention_supported(T, d): AVX512-BF16, T a multiple of 32 up to 1024, d a multiple
// of 32 up to 128 (products on AMX tiles when the CPU has them and d <= 64).
bool attention_supported(int64_t T, int64_t d);
void causal_attention_forward(const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* o,
                              int64_t ldo, uint16_t* p, int64_t T, int64_t d, float scale);
void causal_attention_backward(const uint16_t* q, const uint16_t* k, const uint16_t* v,
                               const uint16_t* o, int64_t ldo, const uint16_t* p,
                               const uint16_t* dout, int64_t lddo, uint16_t* dq, uint16_t* dk,
                               uint16_t* dv, int64_t T, int64_t d, float scale);

// Whether the AVX512 paths run on this CPU (AVX512F, BW, DQ, VL and BF16: Cooper Lake, Sapphire
// Rapids, Zen 4 and later); elsewhere the portable loops run.
bool have_avx512();

}  // namespace fused_cpu
