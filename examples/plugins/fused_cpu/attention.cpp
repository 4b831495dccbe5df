// Causal self-attention for bf16 on AVX512-BF16, one (batch, head) at a time with everything in
// cache: S = q k^T, the causal softmax and P v in one pass per block of 4 query rows, computing
// only the key blocks at or below the diagonal (the eager path computes the full T x T scores and
// masks half of them away). Backward recomputes nothing: P (bf16, as the eager softmax output
// is) is saved. The inner products are vdpbf16ps: 16 fp32 accumulators, each adding two bf16
// products per instruction, over operands packed in pairs (see pack_* below).
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "simd.h"

namespace fused_cpu {
namespace {

constexpr int64_t kMaxBlocks = 64;  // key blocks of 16: T <= 1024

FUSED_AVX512 inline __m512bh bcast_pair(const uint32_t* p) {
  return reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(*p)));
}
FUSED_AVX512 inline __m512bh load_pairs(const void* p) {
  return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
}

// ---- packing -----------------------------------------------------------------------------------
// A row-major bf16 matrix X (n x d) seen as 32-bit words holds pairs along its rows: word (i, p)
// = (X[i][2p], X[i][2p+1]). Two packings give the other operands:
//   transposed pairs  XT[p][i] = word (i, p)                  (n rows -> the vector lanes)
//   interleaved rows  Xi[q][c] = (X[2q][c], X[2q+1][c])       (pairs along the columns)

FUSED_AVX512 void pack_transposed_pairs(const uint16_t* x, int64_t n, int64_t d, uint32_t* xt) {
  const uint32_t* w = reinterpret_cast<const uint32_t*>(x);
  const int64_t dw = d / 2;
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(dw)));
  for (int64_t i0 = 0; i0 < n; i0 += 16)
    for (int64_t p = 0; p < dw; ++p)
      _mm512_storeu_si512(xt + p * n + i0,
                          _mm512_i32gather_epi32(rows, w + i0 * dw + p, 4));
}

FUSED_AVX512 void pack_interleaved_rows(const uint16_t* x, int64_t n, int64_t d, uint16_t* xi,
                                      int64_t ldx = 0) {
  if (ldx == 0) ldx = d;  // row stride of x
  // lanes 2k, 2k+1 <- row 0 [k], row 1 [k] for k in [0, 16) (lo) and [16, 32) (hi)
  alignas(64) static const uint16_t lo_idx[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                  11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static const uint16_t hi_idx[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                  53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                  27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo = _mm512_load_si512(lo_idx), hi = _mm512_load_si512(hi_idx);
  for (int64_t q = 0; q < n / 2; ++q)
    for (int64_t c = 0; c < d; c += 32) {
      const __m512i a = _mm512_loadu_si512(x + (2 * q) * ldx + c);
      const __m512i b = _mm512_loadu_si512(x + (2 * q + 1) * ldx + c);
      _mm512_storeu_si512(xi + (q * d + c) * 2, _mm512_permutex2var_epi16(a, lo, b));
      _mm512_storeu_si512(xi + (q * d + c + 16) * 2, _mm512_permutex2var_epi16(a, hi, b));
    }
}

// ---- the two inner products --------------------------------------------------------------------

// Rows x keys, contracted over d: out[r][c] = sum_p a(r, p) . bt[p][c0 + c] for 4 rows and NB
// blocks of 16 columns (a(r, p) = a[r * lda + p], words; bt: transposed pairs, row length ldb).
template <int NB>
FUSED_AVX512 void rows_by_cols(const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t ldb,
                             int64_t np, float* out, int64_t ldo) {
  __m512 acc[4][NB];
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_setzero_ps();
  for (int64_t p = 0; p < np; ++p) {
    __m512bh bv[NB];
    for (int b = 0; b < NB; ++b) bv[b] = load_pairs(bt + p * ldb + 16 * b);
    for (int r = 0; r < 4; ++r) {
      const __m512bh av = bcast_pair(a + r * lda + p);
      for (int b = 0; b < NB; ++b) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], av, bv[b]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int b = 0; b < NB; ++b) _mm512_storeu_ps(out + r * ldo + 16 * b, acc[r][b]);
}

// Rows x features, contracted over pairs q in [q0, q1): out[r][f] = sum_q a(r, q) . bi[q][f] for 4
// rows and all d = 16 * ND features (a(r, q) = a[r * rs + q * qs], words; bi: interleaved rows).
template <int ND>
FUSED_AVX512 void rows_by_features(const uint32_t* a, int64_t rs, int64_t qs, const uint16_t* bi,
                                 int64_t q0, int64_t q1, float* out) {
  __m512 acc[4][ND];
  for (int r = 0; r < 4; ++r)
    for (int f = 0; f < ND; ++f) acc[r][f] = _mm512_setzero_ps();
  for (int64_t q = q0; q < q1; ++q) {
    __m512bh bv[ND];
    for (int f = 0; f < ND; ++f) bv[f] = load_pairs(bi + (q * 16 * ND + 16 * f) * 2);
    for (int r = 0; r < 4; ++r) {
      const __m512bh av = bcast_pair(a + r * rs + q * qs);
      for (int f = 0; f < ND; ++f) acc[r][f] = _mm512_dpbf16_ps(acc[r][f], av, bv[f]);
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int f = 0; f < ND; ++f) _mm512_storeu_ps(out + r * 16 * ND + 16 * f, acc[r][f]);
}

// The key blocks [0, nb) of 4 rows, in chunks of up to 4 blocks (16 accumulators).
FUSED_AVX512 void scores(const uint32_t* a, int64_t lda, const uint32_t* bt, int64_t T, int64_t np,
                       int64_t nb, float* out) {
  for (int64_t b0 = 0; b0 < nb; b0 += 4) {
    const int64_t n = std::min<int64_t>(4, nb - b0);
    const uint32_t* b = bt + 16 * b0;
    float* o = out + 16 * b0;
    if (n == 4) rows_by_cols<4>(a, lda, b, T, np, o, T);
    else if (n == 3) rows_by_cols<3>(a, lda, b, T, np, o, T);
    else if (n == 2) rows_by_cols<2>(a, lda, b, T, np, o, T);
    else rows_by_cols<1>(a, lda, b, T, np, o, T);
  }
}

FUSED_AVX512 void features(const uint32_t* a, int64_t rs, int64_t qs, const uint16_t* bi, int64_t d,
                         int64_t q0, int64_t q1, float* out) {
  switch (d / 16) {
    case 2: return rows_by_features<2>(a, rs, qs, bi, q0, q1, out);
    case 4: return rows_by_features<4>(a, rs, qs, bi, q0, q1, out);
    case 6: return rows_by_features<6>(a, rs, qs, bi, q0, q1, out);
    default: return rows_by_features<8>(a, rs, qs, bi, q0, q1, out);
  }
}

// ---- the same two products on AMX tiles (Sapphire Rapids and later) ---------------------------
// One tile shape for everything: 16 rows x 64 bytes (A: 16 x 32 bf16; B: 16 pairs x 16 columns;
// C: 16 x 16 fp32). Tiles 0-3 accumulate, 4 holds A, 5 holds B. The configuration is loaded at
// the start of each call and released at its end, so LibTorch's own AMX GEMMs (oneDNN), which
// configure the tiles before they use them, never see ours.

#define FUSED_AMX \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

bool amx_available() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool tile = (d >> 24) & 1, bf16 = (d >> 22) & 1;
    // Linux hands out the tile state per process on request (arch_prctl ARCH_REQ_XCOMP_PERM).
    return tile && bf16 && ::syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  }();
  return ok;
}

FUSED_AMX void amx_begin() {
  TileConfig c;
  for (int t = 0; t < 6; ++t) c.colsb[t] = 64, c.rows[t] = 16;
  _tile_loadconfig(&c);
}
FUSED_AMX void amx_end() {
  _tile_release();
}

#define FUSED_TILE_STEP(t, bptr, bstride) \
  _tile_loadd(5, bptr, bstride);          \
  _tile_dpbf16ps(t, 4, 5);

// out (16 x 16 NB fp32, row stride ldo) = a (16 rows, stride lda bf16; 2 np columns) times bt
// (transposed pairs, np x ldb words): rows by key blocks, contracted over d.
template <int NB>
FUSED_AMX void amx_rows_by_cols(const uint16_t* a, int64_t lda, const uint32_t* bt, int64_t ldb,
                                int64_t np, float* out, int64_t ldo) {
  _tile_zero(0);
  if constexpr (NB > 1) _tile_zero(1);
  if constexpr (NB > 2) _tile_zero(2);
  if constexpr (NB > 3) _tile_zero(3);
  for (int64_t k = 0; k < np; k += 16) {
    _tile_loadd(4, a + 2 * k, lda * 2);
    const uint32_t* b = bt + k * ldb;
    FUSED_TILE_STEP(0, b, ldb * 4);
    if constexpr (NB > 1) { FUSED_TILE_STEP(1, b + 16, ldb * 4); }
    if constexpr (NB > 2) { FUSED_TILE_STEP(2, b + 32, ldb * 4); }
    if constexpr (NB > 3) { FUSED_TILE_STEP(3, b + 48, ldb * 4); }
  }
  _tile_stored(0, out, ldo * 4);
  if constexpr (NB > 1) _tile_stored(1, out + 16, ldo * 4);
  if constexpr (NB > 2) _tile_stored(2, out + 32, ldo * 4);
  if constexpr (NB > 3) _tile_stored(3, out + 48, ldo * 4);
}

// out (16 x d fp32) = a (16 rows, stride lda bf16, pairs along the row) times bi (interleaved
// rows) over the pairs [q0, q1), multiples of 16: rows by features, contracted over keys.
template <int ND>
FUSED_AMX void amx_rows_by_features(const uint16_t* a, int64_t lda, const uint16_t* bi,
                                    int64_t q0, int64_t q1, float* out) {
  constexpr int64_t d = 16 * ND;
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (ND > 2) _tile_zero(2);
  if constexpr (ND > 3) _tile_zero(3);
  for (int64_t q = q0; q < q1; q += 16) {
    _tile_loadd(4, a + 2 * q, lda * 2);
    const uint16_t* b = bi + q * d * 2;
    FUSED_TILE_STEP(0, b, d * 4);
    FUSED_TILE_STEP(1, b + 32, d * 4);
    if constexpr (ND > 2) { FUSED_TILE_STEP(2, b + 64, d * 4); }
    if constexpr (ND > 3) { FUSED_TILE_STEP(3, b + 96, d * 4); }
  }
  _tile_stored(0, out, d * 4);
  _tile_stored(1, out + 16, d * 4);
  if constexpr (ND > 2) _tile_stored(2, out + 32, d * 4);
  if constexpr (ND > 3) _tile_stored(3, out + 48, d * 4);
}

// 16 rows of scores over the key blocks [0, nb), AMX or 4 x 4 rows of vdpbf16ps.
FUSED_AMX void scores16(bool amx, const uint16_t* a, int64_t lda, int64_t d, const uint32_t* bt,
                        int64_t T, int64_t nb, float* out) {
  if (!amx) {
    for (int64_t r = 0; r < 16; r += 4)
      scores(reinterpret_cast<const uint32_t*>(a + r * lda), lda / 2, bt, T, d / 2, nb,
             out + r * T);
    return;
  }
  for (int64_t b0 = 0; b0 < nb; b0 += 4) {
    const int64_t n = std::min<int64_t>(4, nb - b0);
    const uint32_t* b = bt + 16 * b0;
    float* o = out + 16 * b0;
    if (n == 4) amx_rows_by_cols<4>(a, lda, b, T, d / 2, o, T);
    else if (n == 3) amx_rows_by_cols<3>(a, lda, b, T, d / 2, o, T);
    else if (n == 2) amx_rows_by_cols<2>(a, lda, b, T, d / 2, o, T);
    else amx_rows_by_cols<1>(a, lda, b, T, d / 2, o, T);
  }
}

// 16 rows of a (row-major, row stride T) times bi over the pairs [q0, q1), multiples of 16 (AMX).
FUSED_AMX void amx_features16(const uint16_t* a, int64_t T, const uint16_t* bi, int64_t d,
                              int64_t q0, int64_t q1, float* out) {
  if (d == 64) return amx_rows_by_features<4>(a, T, bi, q0, q1, out);
  return amx_rows_by_features<2>(a, T, bi, q0, q1, out);
}

// 16 rows of a (row-major T x T bf16) times bi over the pairs [0, q1): AMX or vdpbf16ps.
FUSED_AMX void features16(bool amx, const uint16_t* a, int64_t T, const uint16_t* bi, int64_t d,
                          int64_t q1, float* out) {
  if (amx && d == 64) return amx_rows_by_features<4>(a, T, bi, 0, q1, out);
  if (amx && d == 32) return amx_rows_by_features<2>(a, T, bi, 0, q1, out);
  for (int64_t r = 0; r < 16; r += 4)
    features(reinterpret_cast<const uint32_t*>(a + r * T), T / 2, 1, bi, d, 0, q1, out + r * d);
}

// 16 x 16 fp32 in registers, transposed (unpack, 64-bit shuffles, 128-bit lane shuffles).
FUSED_AVX512 void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// The 16 x 16 bf16 block at src (row stride ls) into dst (row stride ld), transposed (exact).
FUSED_AVX512 void transpose_block(const uint16_t* src, int64_t ls, uint16_t* dst, int64_t ld) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = vload(src + i * ls);
  transpose16(r);
  for (int i = 0; i < 16; ++i) vstore(dst + i * ld, r[i]);
}

// Rows [j0, j0 + 16) of the transpose of a lower-triangular T x T bf16 matrix x (row-major):
// xt[j][i] = x[i][j], zero for i < j's block.
FUSED_AVX512 void transpose_lower(const uint16_t* x, int64_t T, int64_t j0, uint16_t* xt) {
  for (int64_t r = 0; r < 16; ++r) std::memset(xt + (j0 + r) * T, 0, static_cast<size_t>(j0) * 2);
  for (int64_t i0 = j0; i0 < T; i0 += 16) transpose_block(x + i0 * T + j0, T, xt + j0 * T + i0, T);
}

struct Scratch {
  std::vector<uint32_t> t;                  // transposed pairs (d/2 x T words)
  std::vector<uint16_t> i1, i2, i3, i4;     // interleaved rows (T x d; i4: T x T)
  std::vector<uint16_t> rowmajor, pairs;    // T x T bf16
  std::vector<float> s, o;                  // 16 x T, 16 x d
  void size(int64_t T, int64_t d) {
    t.resize(static_cast<size_t>(T * d / 2));
    for (auto* v : {&i1, &i2, &i3}) v->resize(static_cast<size_t>(T * d));
    i4.resize(static_cast<size_t>(T * T));
    rowmajor.resize(static_cast<size_t>(T * T));
    pairs.resize(static_cast<size_t>(T * T));
    s.resize(static_cast<size_t>(16 * T));
    o.resize(static_cast<size_t>(16 * d));
  }
};
thread_local Scratch tls;

// Rows r0, r0 + 1 of a row-major bf16 matrix (T x T) into the interleaved layout at pair r0 / 2.
FUSED_AVX512 void interleave_two_rows(const uint16_t* x, int64_t T, int64_t r0, uint16_t* xi) {
  pack_interleaved_rows(x + r0 * T, 2, T, xi + r0 * T);
}

FUSED_AMX void forward_impl(const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* o,
                            int64_t ldo, uint16_t* p, int64_t T, int64_t d, float scale) {
  Scratch& w = tls;
  w.size(T, d);
  pack_transposed_pairs(k, T, d, w.t.data());   // k^T, pairs along d
  pack_interleaved_rows(v, T, d, w.i1.data());  // v, pairs along T
  const bool amx = amx_available() && d <= 64;
  if (amx) amx_begin();
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t i0 = 0; i0 < T; i0 += 16) {
    const int64_t nb = i0 / 16 + 1;  // key blocks up to the diagonal
    scores16(amx, q + i0 * d, d, d, w.t.data(), T, nb, w.s.data());  // (16, nb * 16)
    for (int64_t r = 0; r < 16; ++r) {
      const int64_t i = i0 + r;
      float* s = w.s.data() + r * T;
      // softmax over j <= i of scale * s, in fp32; P rounded to bf16, zero above the diagonal
      __m512 mx = _mm512_set1_ps(-INFINITY);
      __mmask16 live[kMaxBlocks];
      for (int64_t b = 0; b < nb; ++b) {
        live[b] = b * 16 + 15 <= i ? 0xFFFF
                  : b * 16 > i   ? 0
                                 : static_cast<__mmask16>((1u << (i - b * 16 + 1)) - 1);
        const __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + 16 * b), vscale);
        _mm512_storeu_ps(s + 16 * b, x);
        mx = _mm512_mask_max_ps(mx, live[b], mx, x);
      }
      const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
      __m512 sum = _mm512_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {  // exactly 0 above the diagonal
        const __m512 e =
            _mm512_maskz_mov_ps(live[b], vexp(_mm512_sub_ps(_mm512_loadu_ps(s + 16 * b), m)));
        _mm512_storeu_ps(s + 16 * b, e);
        sum = _mm512_add_ps(sum, e);
      }
      const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
      uint16_t* prow = p + i * T;
      for (int64_t b = 0; b < nb; ++b)
        vstore(prow + 16 * b, _mm512_mul_ps(_mm512_loadu_ps(s + 16 * b), inv));
      std::memset(prow + 16 * nb, 0, static_cast<size_t>(T - 16 * nb) * 2);
    }
    // o = P v over the pairs of keys up to the diagonal (P is 0 beyond it)
    const int64_t q1 = std::min(T / 2, (i0 / 2 + 8 + 15) / 16 * 16);
    features16(amx, p + i0 * T, T, w.i1.data(), d, q1, w.o.data());
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t f = 0; f < d; f += 16)
        vstore(o + (i0 + r) * ldo + f, _mm512_loadu_ps(w.o.data() + r * d + f));
  }
  if (amx) amx_end();
}

FUSED_AMX void backward_impl(const uint16_t* q, const uint16_t* k, const uint16_t* v,
                             const uint16_t* o, int64_t ldo, const uint16_t* p,
                             const uint16_t* dout, int64_t lddo, uint16_t* dq, uint16_t* dk,
                             uint16_t* dv, int64_t T, int64_t d, float scale) {
  Scratch& w = tls;
  w.size(T, d);
  // dP = dO v^T (v as transposed pairs); dQ = dS k (k interleaved); dK = dS^T q (q interleaved);
  // dV = P^T dO (dO interleaved, P interleaved).
  pack_transposed_pairs(v, T, d, w.t.data());
  pack_interleaved_rows(k, T, d, w.i1.data());
  pack_interleaved_rows(q, T, d, w.i2.data());
  pack_interleaved_rows(dout, T, d, w.i3.data(), lddo);
  uint16_t* ds = w.rowmajor.data();  // dS, row-major bf16
  uint16_t* dsi = w.pairs.data();    // dS, interleaved rows (without AMX)
  const bool amx = amx_available() && d <= 64;
  if (!amx) pack_interleaved_rows(p, T, T, w.i4.data());  // P^T pairs: word (c, i/2) at [i/2][c]
  if (amx) amx_begin();
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t i0 = 0; i0 < T; i0 += 16) {
    const int64_t nb = i0 / 16 + 1;
    scores16(amx, dout + i0 * lddo, lddo, d, w.t.data(), T, nb, w.s.data());  // dP (16, nb * 16)
    for (int64_t r = 0; r < 16; ++r) {
      const int64_t i = i0 + r;
      // D_i = sum_f dO[i][f] O[i][f]
      __m512 acc = _mm512_setzero_ps();
      for (int64_t f = 0; f < d; f += 16)
        acc = _mm512_fmadd_ps(vload(dout + i * lddo + f), vload(o + i * ldo + f), acc);
      const __m512 D = _mm512_set1_ps(_mm512_reduce_add_ps(acc));
      const float* dp = w.s.data() + r * T;
      for (int64_t b = 0; b < nb; ++b) {
        // dS = P (dP - D) * scale; P is zero above the diagonal, and so dS
        const __m512 x = _mm512_mul_ps(_mm512_mul_ps(vload(p + i * T + 16 * b),
                                                     _mm512_sub_ps(_mm512_loadu_ps(dp + 16 * b), D)),
                                       vscale);
        vstore(ds + i * T + 16 * b, x);
      }
      std::memset(ds + i * T + 16 * nb, 0, static_cast<size_t>(T - 16 * nb) * 2);
    }
    if (!amx)
      for (int64_t r = 0; r < 16; r += 2) interleave_two_rows(ds, T, i0 + r, dsi);
    // dQ rows i0..i0+15 = dS k
    const int64_t q1 = std::min(T / 2, (i0 / 2 + 8 + 15) / 16 * 16);
    features16(amx, ds + i0 * T, T, w.i1.data(), d, q1, w.o.data());
    for (int64_t r = 0; r < 16; ++r)
      for (int64_t f = 0; f < d; f += 16)
        vstore(dq + (i0 + r) * d + f, _mm512_loadu_ps(w.o.data() + r * d + f));
  }
  // dK rows j = sum over i >= j of dS[i][j] q[i]; dV rows j = sum over i >= j of P[i][j] dO[i]
  if (amx) {
    // On tiles: the transposes of dS and P as row-major A operands, q and dO interleaved as B.
    uint16_t* dst = w.pairs.data();  // dS^T
    uint16_t* pt = w.i4.data();      // P^T
    for (int64_t j0 = 0; j0 < T; j0 += 16) {
      transpose_lower(ds, T, j0, dst);
      transpose_lower(p, T, j0, pt);
      const int64_t q0 = j0 / 2 / 16 * 16;
      amx_features16(dst + j0 * T, T, w.i2.data(), d, q0, T / 2, w.o.data());
      for (int64_t r = 0; r < 16; ++r)
        for (int64_t f = 0; f < d; f += 16)
          vstore(dk + (j0 + r) * d + f, _mm512_loadu_ps(w.o.data() + r * d + f));
      amx_features16(pt + j0 * T, T, w.i3.data(), d, q0, T / 2, w.o.data());
      for (int64_t r = 0; r < 16; ++r)
        for (int64_t f = 0; f < d; f += 16)
          vstore(dv + (j0 + r) * d + f, _mm512_loadu_ps(w.o.data() + r * d + f));
    }
    amx_end();
    return;
  }
  const uint32_t* dsi32 = reinterpret_cast<const uint32_t*>(dsi);
  const uint32_t* pi32 = reinterpret_cast<const uint32_t*>(w.i4.data());
  for (int64_t j0 = 0; j0 < T; j0 += 4) {
    features(dsi32 + j0, 1, T, w.i2.data(), d, j0 / 2, T / 2, w.o.data());
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t f = 0; f < d; f += 16)
        vstore(dk + (j0 + r) * d + f, _mm512_loadu_ps(w.o.data() + r * d + f));
    features(pi32 + j0, 1, T, w.i3.data(), d, j0 / 2, T / 2, w.o.data());
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t f = 0; f < d; f += 16)
        vstore(dv + (j0 + r) * d + f, _mm512_loadu_ps(w.o.data() + r * d + f));
  }
}

}  // namespace

bool attention_supported(int64_t T, int64_t d) {
  return have_avx512() && T % 32 == 0 && T >= 32 && T <= 16 * kMaxBlocks && d % 32 == 0 &&
         d >= 32 && d <= 128;
}

void causal_attention_forward(const uint16_t* q, const uint16_t* k, const uint16_t* v, uint16_t* o,
                              int64_t ldo, uint16_t* p, int64_t T, int64_t d, float scale) {
  forward_impl(q, k, v, o, ldo, p, T, d, scale);
}

void causal_attention_backward(const uint16_t* q, const uint16_t* k, const uint16_t* v,
                               const uint16_t* o, int64_t ldo, const uint16_t* p,
                               const uint16_t* dout, int64_t lddo, uint16_t* dq, uint16_t* dk,
                               uint16_t* dv, int64_t T, int64_t d, float scale) {
  backward_impl(q, k, v, o, ldo, p, dout, lddo, dq, dk, dv, T, d, scale);
}

}  // namespace fused_cpu
