// AVX512 building blocks shared by the fused_cpu kernels (kernels.cpp, attention.cpp): loads and
// stores of float or bf16 (uint16_t) lanes, and exp. Each function carries its own target
// attribute: the library is built for any x86-64 and checks the CPU before calling them.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace fused_cpu {

#define FUSED_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

FUSED_AVX512 inline __m512 vload(const float* p) {
  return _mm512_loadu_ps(p);
}
FUSED_AVX512 inline __m512 vload(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
FUSED_AVX512 inline void vstore(float* p, __m512 x) {
  _mm512_storeu_ps(p, x);
}
FUSED_AVX512 inline void vstore(uint16_t* p, __m512 x) {
  // Round to nearest even, NaN kept (AVX512-BF16): as c10::BFloat16 rounds.
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
}

// exp(x): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite), e^r by its degree-7 Taylor polynomial
// (relative error < 1e-8 on that interval), times 2^n by scalef. About 1 ulp.
FUSED_AVX512 inline __m512 vexp(__m512 x) {
  x = _mm512_min_ps(x, _mm512_set1_ps(88.7228f));
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace fused_cpu
