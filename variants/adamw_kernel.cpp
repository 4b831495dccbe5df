#include "variants/adamw_kernel.h"

#include <ATen/Parallel.h>

namespace lockstep::variants {

void adamw_cpu_fp32(float* __restrict p, const float* __restrict g, float* __restrict m,
                    float* __restrict v, const float* __restrict decay, int64_t n, float b1,
                    float b2, float sqrt_bc2, float eps, float lr_wd, float step) {
  const float omb1 = 1.0f - b1, omb2 = 1.0f - b2;
  at::parallel_for(0, n, 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {  // vectorized by the compiler (see CMake flags)
      const float gi = g[i];
      const float mi = m[i] * b1 + gi * omb1;
      const float vi = v[i] * b2 + gi * gi * omb2;
      const float d = __builtin_sqrtf(vi) / sqrt_bc2 + eps;
      float pi = p[i];
      pi = pi - lr_wd * decay[i] * pi;
      pi = pi - step * mi / d;
      m[i] = mi;
      v[i] = vi;
      p[i] = pi;
    }
  });
}

}  // namespace lockstep::variants
