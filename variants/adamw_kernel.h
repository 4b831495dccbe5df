// The fused fp32 AdamW loop of the built-in "adamw" (variants/adamw.cpp). Its own file so that it
// alone is compiled with the flags it vectorizes under (-O3 -fno-math-errno, CMakeLists.txt), and
// with a header far lighter than LibTorch's, while adamw.cpp compiles with the library's flags and
// precompiled LibTorch header.
#pragma once

#include <cstdint>

namespace lockstep::variants {

// The same update in one pass over memory (the ATen-op form in adamw.cpp makes nine: each op reads
// and writes whole buffers, and the buffers are far larger than the caches). Per element, in this
// order: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; d = sqrt(v)/sqrt(bc2) + eps;
// p = p - lr*wd*decay*p; p = p - step*m/d. p, g, m, v, decay: n contiguous floats each.
// Elementwise and fixed-order: deterministic for any thread count.
void adamw_cpu_fp32(float* __restrict p, const float* __restrict g, float* __restrict m,
                    float* __restrict v, const float* __restrict decay, int64_t n, float b1,
                    float b2, float sqrt_bc2, float eps, float lr_wd, float step);

}  // namespace lockstep::variants
