#include "kernels.h"
#include "simd.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fused_cpu {
namespace {

// ---- scalar helpers (the portable path, and the tails of the vector path) -------------------

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t f32_to_bf16(float f) {  // round to nearest even, NaN stays NaN (as c10)
  if (std::isnan(f)) return 0x7FC0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

inline float load1(const void* p, Dt dt, int64_t i) {
  return dt == Dt::F32 ? static_cast<const float*>(p)[i]
                       : bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
}
inline void store1(void* p, Dt dt, int64_t i, float x) {
  if (dt == Dt::F32)
    static_cast<float*>(p)[i] = x;
  else
    static_cast<uint16_t*>(p)[i] = f32_to_bf16(x);
}

constexpr float kSqrt1_2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

inline float gelu1(float u) {
  return 0.5f * u * (1.0f + std::erf(u * kSqrt1_2));
}
inline float gelu_grad1(float u) {
  const float cdf = 0.5f * (1.0f + std::erf(u * kSqrt1_2));
  const float pdf = kInvSqrt2Pi * std::exp(-0.5f * u * u);
  return cdf + u * pdf;
}

// ---- AVX512 building blocks --------------------------------------------------------------------


// erf(x): the rational approximation of Eigen / XLA for fp32 (odd degree-13 numerator over an
// even degree-8 denominator, inputs clamped to [-4, 4] where erf is +-1 in fp32): a few ulp.
FUSED_AVX512 inline __m512 verf(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-4.0f)), _mm512_set1_ps(4.0f));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-2.72614225801306e-10f);
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(2.77068142495902e-08f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-2.10102402082508e-06f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-5.69250639462346e-05f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-7.34990630326855e-04f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-2.95459980854025e-03f));
  p = _mm512_fmadd_ps(p, x2, _mm512_set1_ps(-1.60960333262415e-02f));
  p = _mm512_mul_ps(p, x);
  __m512 q = _mm512_set1_ps(-1.45660718464996e-05f);
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-2.13374055278905e-04f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.68282697438203e-03f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-7.37332916720468e-03f));
  q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.42647390514189e-02f));
  // p / q by a reciprocal estimate (14 bits) and one Newton step (~23 bits): a division is
  // ~10x the throughput cost of the multiplies here.
  __m512 r = _mm512_rcp14_ps(q);
  r = _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(2.0f)));
  return _mm512_mul_ps(p, r);
}

FUSED_AVX512 inline __m512 vgelu(__m512 u) {
  const __m512 half_u = _mm512_mul_ps(_mm512_set1_ps(0.5f), u);
  return _mm512_fmadd_ps(half_u, verf(_mm512_mul_ps(u, _mm512_set1_ps(kSqrt1_2))), half_u);
}

FUSED_AVX512 inline __m512 vgelu_grad(__m512 u) {
  const __m512 cdf = _mm512_fmadd_ps(_mm512_set1_ps(0.5f),
                                     verf(_mm512_mul_ps(u, _mm512_set1_ps(kSqrt1_2))),
                                     _mm512_set1_ps(0.5f));
  const __m512 pdf = _mm512_mul_ps(
      _mm512_set1_ps(kInvSqrt2Pi),
      vexp(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(u, u))));
  return _mm512_fmadd_ps(u, pdf, cdf);
}

// ---- bias + GELU -------------------------------------------------------------------------------

template <typename T>
FUSED_AVX512 void bias_gelu_fwd_avx(const T* h, const float* b, T* y, T* g, int64_t r0, int64_t r1,
                                    int64_t M) {
  const int64_t Mv = M / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  const __m512 half = _mm512_set1_ps(0.5f);
  for (int64_t i = r0; i < r1; ++i) {
    const T* hr = h + i * M;
    T* yr = y + i * M;
    T* gr = g + i * M;
    for (int64_t j = 0; j < Mv; j += 16) {
      // u = h + b; cdf = (1 + erf(u / sqrt 2)) / 2; y = u cdf; g = gelu'(u) = cdf + u pdf(u)
      const __m512 u = _mm512_add_ps(vload(hr + j), vload(b + j));
      const __m512 cdf =
          _mm512_fmadd_ps(half, verf(_mm512_mul_ps(u, _mm512_set1_ps(kSqrt1_2))), half);
      const __m512 pdf = _mm512_mul_ps(_mm512_set1_ps(kInvSqrt2Pi),
                                       vexp(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(u, u))));
      vstore(yr + j, _mm512_mul_ps(u, cdf));
      vstore(gr + j, _mm512_fmadd_ps(u, pdf, cdf));
    }
    for (int64_t j = Mv; j < M; ++j) {
      const float u = load1(hr, dt, j) + b[j];
      store1(yr, dt, j, gelu1(u));
      store1(gr, dt, j, gelu_grad1(u));
    }
  }
}

template <typename T>
FUSED_AVX512 void bias_gelu_bwd_avx(const T* dy, const T* g, T* du, float* db, int64_t r0,
                                    int64_t r1, int64_t M) {
  const int64_t Mv = M / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  for (int64_t i = r0; i < r1; ++i) {
    const T* gr = g + i * M;
    const T* dyr = dy + i * M;
    T* dur = du + i * M;
    for (int64_t j = 0; j < Mv; j += 16) {
      const __m512 d = _mm512_mul_ps(vload(dyr + j), vload(gr + j));
      vstore(dur + j, d);
      vstore(db + j, _mm512_add_ps(vload(db + j), d));
    }
    for (int64_t j = Mv; j < M; ++j) {
      const float d = load1(dyr, dt, j) * load1(gr, dt, j);
      store1(dur, dt, j, d);
      db[j] += d;
    }
  }
}

// ---- LayerNorm -----------------------------------------------------------------------------------

template <typename T>
FUSED_AVX512 void layer_norm_fwd_avx(const float* x, const float* w, const float* b, T* y,
                                     float* mean, float* rstd, float eps, int64_t r0, int64_t r1,
                                     int64_t C) {
  const int64_t Cv = C / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  for (int64_t i = r0; i < r1; ++i) {
    const float* xr = x + i * C;
    T* yr = y + i * C;
    __m512 s = _mm512_setzero_ps();
    for (int64_t j = 0; j < Cv; j += 16) s = _mm512_add_ps(s, vload(xr + j));
    float sum = _mm512_reduce_add_ps(s);
    for (int64_t j = Cv; j < C; ++j) sum += xr[j];
    const float mu = sum / static_cast<float>(C);
    const __m512 vmu = _mm512_set1_ps(mu);
    __m512 q = _mm512_setzero_ps();
    for (int64_t j = 0; j < Cv; j += 16) {
      const __m512 d = _mm512_sub_ps(vload(xr + j), vmu);
      q = _mm512_fmadd_ps(d, d, q);
    }
    float var = _mm512_reduce_add_ps(q);
    for (int64_t j = Cv; j < C; ++j) var += (xr[j] - mu) * (xr[j] - mu);
    const float rs = 1.0f / std::sqrt(var / static_cast<float>(C) + eps);
    mean[i] = mu;
    rstd[i] = rs;
    const __m512 vrs = _mm512_set1_ps(rs);
    for (int64_t j = 0; j < Cv; j += 16) {
      const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(vload(xr + j), vmu), vrs);
      vstore(yr + j, _mm512_fmadd_ps(xh, vload(w + j), vload(b + j)));
    }
    for (int64_t j = Cv; j < C; ++j) store1(yr, dt, j, (xr[j] - mu) * rs * w[j] + b[j]);
  }
}

template <typename T>
FUSED_AVX512 void layer_norm_bwd_avx(const T* dy, const float* x, const float* w,
                                     const float* mean, const float* rstd, float* dx, float* dw,
                                     float* db, int64_t r0, int64_t r1, int64_t C) {
  const int64_t Cv = C / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  for (int64_t i = r0; i < r1; ++i) {
    const float* xr = x + i * C;
    const T* dyr = dy + i * C;
    float* dxr = dx + i * C;
    const __m512 vmu = _mm512_set1_ps(mean[i]), vrs = _mm512_set1_ps(rstd[i]);
    // a = mean(dy w), c = mean(dy w xhat); dw += dy xhat; db += dy
    __m512 sa = _mm512_setzero_ps(), sc = _mm512_setzero_ps();
    for (int64_t j = 0; j < Cv; j += 16) {
      const __m512 g = vload(dyr + j);
      const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(vload(xr + j), vmu), vrs);
      const __m512 gw = _mm512_mul_ps(g, vload(w + j));
      sa = _mm512_add_ps(sa, gw);
      sc = _mm512_fmadd_ps(gw, xh, sc);
      vstore(dw + j, _mm512_fmadd_ps(g, xh, vload(dw + j)));
      vstore(db + j, _mm512_add_ps(vload(db + j), g));
    }
    float a = _mm512_reduce_add_ps(sa), c = _mm512_reduce_add_ps(sc);
    for (int64_t j = Cv; j < C; ++j) {
      const float g = load1(dyr, dt, j), xh = (xr[j] - mean[i]) * rstd[i];
      a += g * w[j];
      c += g * w[j] * xh;
      dw[j] += g * xh;
      db[j] += g;
    }
    a /= static_cast<float>(C);
    c /= static_cast<float>(C);
    const __m512 va = _mm512_set1_ps(a), vc = _mm512_set1_ps(c);
    for (int64_t j = 0; j < Cv; j += 16) {
      const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(vload(xr + j), vmu), vrs);
      const __m512 gw = _mm512_mul_ps(vload(dyr + j), vload(w + j));
      vstore(dxr + j, _mm512_mul_ps(vrs, _mm512_sub_ps(_mm512_sub_ps(gw, va), _mm512_mul_ps(xh, vc))));
    }
    for (int64_t j = Cv; j < C; ++j) {
      const float xh = (xr[j] - mean[i]) * rstd[i];
      dxr[j] = rstd[i] * (load1(dyr, dt, j) * w[j] - a - xh * c);
    }
  }
}

// ---- cross-entropy -------------------------------------------------------------------------------

template <typename T>
FUSED_AVX512 double ce_fwd_avx(const T* logits, const int64_t* target, float* lse, int64_t r0,
                               int64_t r1, int64_t V) {
  const int64_t Vv = V / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  double total = 0;
  for (int64_t i = r0; i < r1; ++i) {
    const T* lr = logits + i * V;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < Vv; j += 16) mx = _mm512_max_ps(mx, vload(lr + j));
    float m = _mm512_reduce_max_ps(mx);
    for (int64_t j = Vv; j < V; ++j) m = std::max(m, load1(lr, dt, j));
    const __m512 vm = _mm512_set1_ps(m);
    __m512 s = _mm512_setzero_ps();
    for (int64_t j = 0; j < Vv; j += 16) s = _mm512_add_ps(s, vexp(_mm512_sub_ps(vload(lr + j), vm)));
    float sum = _mm512_reduce_add_ps(s);
    for (int64_t j = Vv; j < V; ++j) sum += std::exp(load1(lr, dt, j) - m);
    lse[i] = m + std::log(sum);
    total += static_cast<double>(lse[i]) - static_cast<double>(load1(lr, dt, target[i]));
  }
  return total;
}

template <typename T>
FUSED_AVX512 void ce_bwd_avx(const T* logits, const int64_t* target, const float* lse, float scale,
                             T* dl, int64_t r0, int64_t r1, int64_t V) {
  const int64_t Vv = V / 16 * 16;
  const Dt dt = sizeof(T) == 4 ? Dt::F32 : Dt::BF16;
  const __m512 vs = _mm512_set1_ps(scale);
  for (int64_t i = r0; i < r1; ++i) {
    const T* lr = logits + i * V;
    T* dr = dl + i * V;
    const __m512 vl = _mm512_set1_ps(lse[i]);
    const int64_t t = target[i];
    for (int64_t j = 0; j < Vv; j += 16) {
      __m512 p = vexp(_mm512_sub_ps(vload(lr + j), vl));
      if (t >= j && t < j + 16)  // the target's lane: softmax - 1
        p = _mm512_mask_sub_ps(p, static_cast<__mmask16>(1u << (t - j)), p, _mm512_set1_ps(1.0f));
      vstore(dr + j, _mm512_mul_ps(p, vs));
    }
    for (int64_t j = Vv; j < V; ++j)
      store1(dr, dt, j, (std::exp(load1(lr, dt, j) - lse[i]) - (j == t ? 1.0f : 0.0f)) * scale);
  }
}

// ---- AdamW -------------------------------------------------------------------------------------

FUSED_AVX512 void adamw_avx(float* p, const float* g, float* m, float* v, int64_t i0, int64_t i1,
                            float dv, const AdamWArgs& a) {
  const __m512 b1 = _mm512_set1_ps(a.b1), b2 = _mm512_set1_ps(a.b2);
  const __m512 omb1 = _mm512_set1_ps(1.0f - a.b1), omb2 = _mm512_set1_ps(1.0f - a.b2);
  const __m512 sbc2 = _mm512_set1_ps(a.sqrt_bc2), eps = _mm512_set1_ps(a.eps);
  const __m512 wd = _mm512_set1_ps(a.lr_wd * dv), step = _mm512_set1_ps(a.step);
  int64_t i = i0;
  // Separate multiplies and adds (no FMA), in the built-in's order: the same roundings.
  for (; i + 16 <= i1; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + i), b1), _mm512_mul_ps(gi, omb1));
    const __m512 vi = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + i), b2),
                                    _mm512_mul_ps(_mm512_mul_ps(gi, gi), omb2));
    const __m512 d = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), sbc2), eps);
    __m512 pi = _mm512_loadu_ps(p + i);
    pi = _mm512_sub_ps(pi, _mm512_mul_ps(wd, pi));
    pi = _mm512_sub_ps(pi, _mm512_div_ps(_mm512_mul_ps(step, mi), d));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    _mm512_storeu_ps(p + i, pi);
  }
  for (; i < i1; ++i) {
    const float gi = g[i];
    const float mi = m[i] * a.b1 + gi * (1.0f - a.b1);
    const float vi = v[i] * a.b2 + gi * gi * (1.0f - a.b2);
    const float d = std::sqrt(vi) / a.sqrt_bc2 + a.eps;
    float pi = p[i];
    pi = pi - a.lr_wd * dv * pi;
    pi = pi - a.step * mi / d;
    m[i] = mi, v[i] = vi, p[i] = pi;
  }
}

}  // namespace

bool have_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bf16");
  return yes;
}

// ---- dispatch: AVX512 when the CPU has it, else the portable loops ---------------------------

void bias_gelu_forward(const void* h, const float* b, void* y, void* g, Dt dt, int64_t r0,
                       int64_t r1, int64_t M) {
  if (have_avx512()) {
    if (dt == Dt::F32)
      return bias_gelu_fwd_avx(static_cast<const float*>(h), b, static_cast<float*>(y),
                               static_cast<float*>(g), r0, r1, M);
    return bias_gelu_fwd_avx(static_cast<const uint16_t*>(h), b, static_cast<uint16_t*>(y),
                             static_cast<uint16_t*>(g), r0, r1, M);
  }
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < M; ++j) {
      const float u = load1(h, dt, i * M + j) + b[j];
      store1(y, dt, i * M + j, gelu1(u));
      store1(g, dt, i * M + j, gelu_grad1(u));
    }
}

void bias_gelu_backward(const void* dy, const void* g, void* du, float* db, Dt dt, int64_t r0,
                        int64_t r1, int64_t M) {
  if (have_avx512()) {
    if (dt == Dt::F32)
      return bias_gelu_bwd_avx(static_cast<const float*>(dy), static_cast<const float*>(g),
                               static_cast<float*>(du), db, r0, r1, M);
    return bias_gelu_bwd_avx(static_cast<const uint16_t*>(dy), static_cast<const uint16_t*>(g),
                             static_cast<uint16_t*>(du), db, r0, r1, M);
  }
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < M; ++j) {
      const float d = load1(dy, dt, i * M + j) * load1(g, dt, i * M + j);
      store1(du, dt, i * M + j, d);
      db[j] += d;
    }
}

void layer_norm_forward(const float* x, const float* w, const float* b, void* y, Dt ydt,
                        float* mean, float* rstd, float eps, int64_t r0, int64_t r1, int64_t C) {
  if (have_avx512()) {
    if (ydt == Dt::F32)
      return layer_norm_fwd_avx(x, w, b, static_cast<float*>(y), mean, rstd, eps, r0, r1, C);
    return layer_norm_fwd_avx(x, w, b, static_cast<uint16_t*>(y), mean, rstd, eps, r0, r1, C);
  }
  for (int64_t i = r0; i < r1; ++i) {
    const float* xr = x + i * C;
    float mu = 0, var = 0;
    for (int64_t j = 0; j < C; ++j) mu += xr[j];
    mu /= static_cast<float>(C);
    for (int64_t j = 0; j < C; ++j) var += (xr[j] - mu) * (xr[j] - mu);
    const float rs = 1.0f / std::sqrt(var / static_cast<float>(C) + eps);
    mean[i] = mu, rstd[i] = rs;
    for (int64_t j = 0; j < C; ++j) store1(y, ydt, i * C + j, (xr[j] - mu) * rs * w[j] + b[j]);
  }
}

void layer_norm_backward(const void* dy, Dt dydt, const float* x, const float* w,
                         const float* mean, const float* rstd, float* dx, float* dw, float* db,
                         int64_t r0, int64_t r1, int64_t C) {
  if (have_avx512()) {
    if (dydt == Dt::F32)
      return layer_norm_bwd_avx(static_cast<const float*>(dy), x, w, mean, rstd, dx, dw, db, r0,
                                r1, C);
    return layer_norm_bwd_avx(static_cast<const uint16_t*>(dy), x, w, mean, rstd, dx, dw, db, r0,
                              r1, C);
  }
  for (int64_t i = r0; i < r1; ++i) {
    float a = 0, c = 0;
    for (int64_t j = 0; j < C; ++j) {
      const float g = load1(dy, dydt, i * C + j), xh = (x[i * C + j] - mean[i]) * rstd[i];
      a += g * w[j];
      c += g * w[j] * xh;
      dw[j] += g * xh;
      db[j] += g;
    }
    a /= static_cast<float>(C);
    c /= static_cast<float>(C);
    for (int64_t j = 0; j < C; ++j) {
      const float xh = (x[i * C + j] - mean[i]) * rstd[i];
      dx[i * C + j] = rstd[i] * (load1(dy, dydt, i * C + j) * w[j] - a - xh * c);
    }
  }
}

double cross_entropy_forward(const void* logits, Dt dt, const int64_t* target, float* lse,
                             int64_t r0, int64_t r1, int64_t V) {
  if (have_avx512()) {
    if (dt == Dt::F32) return ce_fwd_avx(static_cast<const float*>(logits), target, lse, r0, r1, V);
    return ce_fwd_avx(static_cast<const uint16_t*>(logits), target, lse, r0, r1, V);
  }
  double total = 0;
  for (int64_t i = r0; i < r1; ++i) {
    float m = -INFINITY, s = 0;
    for (int64_t j = 0; j < V; ++j) m = std::max(m, load1(logits, dt, i * V + j));
    for (int64_t j = 0; j < V; ++j) s += std::exp(load1(logits, dt, i * V + j) - m);
    lse[i] = m + std::log(s);
    total += static_cast<double>(lse[i]) - load1(logits, dt, i * V + target[i]);
  }
  return total;
}

void cross_entropy_backward(const void* logits, Dt dt, const int64_t* target, const float* lse,
                            float scale, void* dlogits, int64_t r0, int64_t r1, int64_t V) {
  if (have_avx512()) {
    if (dt == Dt::F32)
      return ce_bwd_avx(static_cast<const float*>(logits), target, lse, scale,
                        static_cast<float*>(dlogits), r0, r1, V);
    return ce_bwd_avx(static_cast<const uint16_t*>(logits), target, lse, scale,
                      static_cast<uint16_t*>(dlogits), r0, r1, V);
  }
  for (int64_t i = r0; i < r1; ++i)
    for (int64_t j = 0; j < V; ++j)
      store1(dlogits, dt, i * V + j,
             (std::exp(load1(logits, dt, i * V + j) - lse[i]) - (j == target[i] ? 1.0f : 0.0f)) *
                 scale);
}

void adamw(float* p, const float* g, float* m, float* v, const int64_t* run_start,
           const float* run_value, int64_t n_runs, const AdamWArgs& a) {
  for (int64_t k = 0; k < n_runs; ++k) {
    const int64_t i0 = run_start[k], i1 = run_start[k + 1];
    const float dv = run_value[k];
    if (have_avx512()) {
      adamw_avx(p, g, m, v, i0, i1, dv, a);
      continue;
    }
    for (int64_t i = i0; i < i1; ++i) {
      const float gi = g[i];
      const float mi = m[i] * a.b1 + gi * (1.0f - a.b1);
      const float vi = v[i] * a.b2 + gi * gi * (1.0f - a.b2);
      const float d = std::sqrt(vi) / a.sqrt_bc2 + a.eps;
      float pi = p[i];
      pi = pi - a.lr_wd * dv * pi;
      pi = pi - a.step * mi / d;
      m[i] = mi, v[i] = vi, p[i] = pi;
    }
  }
}

}  // namespace fused_cpu
