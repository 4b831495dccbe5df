// The fused CUDA kernels of the example plugin (kernels.h says what each computes). Plain CUDA C++:
// one thread per element for the element-wise passes, one warp per row for LayerNorm, and for
// the sums over rows a (32 columns x 8 row lanes) block per fixed chunk of rows, reduced in a
// fixed order through shared memory and then over the chunks (no atomics: reproducible bits).
// Written for clarity first; sm_80 and sm_90 (H100 / H200) are the targets (CMakeLists.txt).
#include "kernels.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

namespace fused_cuda {
namespace {

constexpr int64_t kChunkRows = 128;  // rows per partial sum (fixed: results do not depend on the GPU)
constexpr int kWarp = 32;
constexpr int kLanes = 8;            // row lanes of a column-reduction block (32 x 8 threads)
constexpr int kRowsPerBlock = 4;     // LayerNorm rows (warps) per block
constexpr int kThreads = 256;        // element-wise blocks
constexpr int64_t kMaxGridY = 65535;

// GELU's constants, as LibTorch's CUDA kernel writes them: 1/sqrt(2) and 1/sqrt(2 pi).
constexpr float kAlpha = 0.70710678118654752440f;
constexpr float kBeta = 0.39894228040143267794f;

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
// Stores v and returns the value as stored (rounded to bf16 for a bf16 buffer).
__device__ __forceinline__ float store(float* p, int64_t i, float v) {
  p[i] = v;
  return v;
}
__device__ __forceinline__ float store(__nv_bfloat16* p, int64_t i, float v) {
  const __nv_bfloat16 r = __float2bfloat16_rn(v);
  p[i] = r;
  return __bfloat162float(r);
}

__device__ __forceinline__ float warp_sum(float v) {  // every lane gets the sum, in a fixed order
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Calls f with a value of the storage type of `dt` (float or __nv_bfloat16).
template <typename F>
void with_type(Dt dt, F&& f) {
  if (dt == Dt::F32)
    f(float{});
  else
    f(__nv_bfloat16{});
}

// ---- bias + GELU -----------------------------------------------------------------------------

// grid (M / 256, up to 65535 row slots), each block striding over rows.
template <typename T>
__global__ void bias_gelu_forward_kernel(const T* __restrict__ h, const float* __restrict__ b,
                                         T* __restrict__ y, int64_t rows, int64_t M) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= M) return;
  const float bc = b[col];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t i = r * M + col;
    const float u = load(h, i) + bc;
    store(y, i, u * 0.5f * (1.0f + erff(u * kAlpha)));
  }
}

// grid (M / 32, chunks); block (32, 8). du = dy gelu'(h + b); partial[chunk][col] = the chunk's
// sum of du as stored.
template <typename T>
__global__ void bias_gelu_backward_kernel(const T* __restrict__ dy, const T* __restrict__ h,
                                          const float* __restrict__ b, T* __restrict__ du,
                                          float* __restrict__ partial, int64_t rows, int64_t M) {
  __shared__ float acc_s[kLanes][kWarp + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kWarp + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t r1 = r0 + kChunkRows < rows ? r0 + kChunkRows : rows;
  float acc = 0.0f;
  if (col < M) {
    const float bc = b[col];
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanes) {
      const int64_t i = r * M + col;
      const float u = load(h, i) + bc;
      const float cdf = 0.5f * (1.0f + erff(u * kAlpha));
      const float pdf = expf(-0.5f * u * u) * kBeta;
      acc += store(du, i, load(dy, i) * (cdf + u * pdf));
    }
  }
  acc_s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < M) {
    float s = 0.0f;
    for (int k = 0; k < kLanes; ++k) s += acc_s[k][threadIdx.x];
    partial[blockIdx.y * M + col] = s;
  }
}

// out[col] = sum over chunks of partial[chunk][col], chunks in order.
__global__ void sum_chunks_kernel(const float* __restrict__ partial, float* __restrict__ out,
                                  int64_t chunks, int64_t width) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= width) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * width + col];
  out[col] = s;
}

void sum_chunks(const float* partial, float* out, int64_t chunks, int64_t width,
                cudaStream_t stream) {
  sum_chunks_kernel<<<static_cast<unsigned>(ceil_div(width, kThreads)), kThreads, 0, stream>>>(
      partial, out, chunks, width);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// ---- LayerNorm -------------------------------------------------------------------------------

// One warp per row; block (32, 4).
template <typename Tx, typename Ty>
__global__ void layer_norm_forward_kernel(const Tx* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, Ty* __restrict__ y,
                                          float* __restrict__ mean, float* __restrict__ rstd,
                                          float eps, int64_t rows, int64_t C) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;  // the whole warp: the shuffles below see all 32 lanes
  const Tx* xr = x + row * C;
  const float inv_c = 1.0f / static_cast<float>(C);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += kWarp) s += load(xr, c);
  const float m = warp_sum(s) * inv_c;
  float q = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += kWarp) {
    const float d = load(xr, c) - m;
    q += d * d;
  }
  const float r = rsqrtf(warp_sum(q) * inv_c + eps);
  Ty* yr = y + row * C;
  for (int64_t c = threadIdx.x; c < C; c += kWarp) store(yr, c, (load(xr, c) - m) * r * w[c] + b[c]);
  if (threadIdx.x == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

// dx, one warp per row; block (32, 4).
template <typename Tdy, typename Tx>
__global__ void layer_norm_backward_dx_kernel(const Tdy* __restrict__ dy,
                                              const Tx* __restrict__ x,
                                              const float* __restrict__ w,
                                              const float* __restrict__ mean,
                                              const float* __restrict__ rstd, Tx* __restrict__ dx,
                                              int64_t rows, int64_t C) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= rows) return;
  const Tdy* dyr = dy + row * C;
  const Tx* xr = x + row * C;
  const float m = mean[row], r = rstd[row], inv_c = 1.0f / static_cast<float>(C);
  float s1 = 0.0f, s2 = 0.0f;  // sum of g, sum of g xhat
  for (int64_t c = threadIdx.x; c < C; c += kWarp) {
    const float g = load(dyr, c) * w[c];
    s1 += g;
    s2 += g * ((load(xr, c) - m) * r);
  }
  const float g_mean = warp_sum(s1) * inv_c, gx_mean = warp_sum(s2) * inv_c;
  Tx* dxr = dx + row * C;
  for (int64_t c = threadIdx.x; c < C; c += kWarp) {
    const float g = load(dyr, c) * w[c];
    const float xhat = (load(xr, c) - m) * r;
    store(dxr, c, r * (g - g_mean - xhat * gx_mean));
  }
}

// dw and db partial sums; grid (C / 32, chunks), block (32, 8).
template <typename Tdy, typename Tx>
__global__ void layer_norm_backward_dwdb_kernel(const Tdy* __restrict__ dy,
                                                const Tx* __restrict__ x,
                                                const float* __restrict__ mean,
                                                const float* __restrict__ rstd,
                                                float* __restrict__ partial_w,
                                                float* __restrict__ partial_b, int64_t rows,
                                                int64_t C) {
  __shared__ float sw[kLanes][kWarp + 1], sb[kLanes][kWarp + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kWarp + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kChunkRows;
  const int64_t r1 = r0 + kChunkRows < rows ? r0 + kChunkRows : rows;
  float aw = 0.0f, ab = 0.0f;
  if (col < C) {
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanes) {
      const int64_t i = r * C + col;
      const float d = load(dy, i);
      aw += d * ((load(x, i) - mean[r]) * rstd[r]);
      ab += d;
    }
  }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && col < C) {
    float tw = 0.0f, tb = 0.0f;
    for (int k = 0; k < kLanes; ++k) {
      tw += sw[k][threadIdx.x];
      tb += sb[k][threadIdx.x];
    }
    partial_w[blockIdx.y * C + col] = tw;
    partial_b[blockIdx.y * C + col] = tb;
  }
}

cudaStream_t stream_of(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

dim3 reduction_grid(int64_t rows, int64_t width) {
  const int64_t chunks = reduce_chunks(rows);
  TORCH_CHECK(chunks <= kMaxGridY, "fused_cuda: ", rows, " rows is more than a reduction handles (",
              kMaxGridY * kChunkRows, ")");
  return dim3(static_cast<unsigned>(ceil_div(width, kWarp)), static_cast<unsigned>(chunks));
}

}  // namespace

int64_t reduce_chunks(int64_t rows) { return ceil_div(rows, kChunkRows); }

void bias_gelu_forward(const void* h, const float* b, void* y, Dt dt, int64_t rows, int64_t M,
                       int device) {
  if (rows == 0 || M == 0) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = stream_of(device);
  const dim3 grid(static_cast<unsigned>(ceil_div(M, kThreads)),
                  static_cast<unsigned>(std::min(rows, kMaxGridY)));
  with_type(dt, [&](auto t) {
    using T = decltype(t);
    bias_gelu_forward_kernel<T><<<grid, kThreads, 0, stream>>>(
        static_cast<const T*>(h), b, static_cast<T*>(y), rows, M);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void bias_gelu_backward(const void* dy, const void* h, const float* b, void* du, float* partial,
                        float* db, Dt dt, int64_t rows, int64_t M, int device) {
  if (M == 0) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = stream_of(device);
  if (rows > 0) {
    with_type(dt, [&](auto t) {
      using T = decltype(t);
      bias_gelu_backward_kernel<T><<<reduction_grid(rows, M), dim3(kWarp, kLanes), 0, stream>>>(
          static_cast<const T*>(dy), static_cast<const T*>(h), b, static_cast<T*>(du), partial,
          rows, M);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  sum_chunks(partial, db, reduce_chunks(rows), M, stream);
}

void layer_norm_forward(const void* x, Dt xdt, const float* w, const float* b, void* y, Dt ydt,
                        float* mean, float* rstd, float eps, int64_t rows, int64_t C,
                        int device) {
  if (rows == 0) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = stream_of(device);
  const dim3 grid(static_cast<unsigned>(ceil_div(rows, kRowsPerBlock)));
  with_type(xdt, [&](auto xt) {
    using Tx = decltype(xt);
    with_type(ydt, [&](auto yt) {
      using Ty = decltype(yt);
      layer_norm_forward_kernel<Tx, Ty><<<grid, dim3(kWarp, kRowsPerBlock), 0, stream>>>(
          static_cast<const Tx*>(x), w, b, static_cast<Ty*>(y), mean, rstd, eps, rows, C);
    });
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void layer_norm_backward(const void* dy, Dt dydt, const void* x, Dt xdt, const float* w,
                         const float* mean, const float* rstd, void* dx, float* partial_w,
                         float* partial_b, float* dw, float* db, int64_t rows, int64_t C,
                         int device) {
  if (C == 0) return;
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const cudaStream_t stream = stream_of(device);
  if (rows > 0) {
    const dim3 grid(static_cast<unsigned>(ceil_div(rows, kRowsPerBlock)));
    with_type(dydt, [&](auto dyt) {
      using Tdy = decltype(dyt);
      with_type(xdt, [&](auto xt) {
        using Tx = decltype(xt);
        layer_norm_backward_dx_kernel<Tdy, Tx><<<grid, dim3(kWarp, kRowsPerBlock), 0, stream>>>(
            static_cast<const Tdy*>(dy), static_cast<const Tx*>(x), w, mean, rstd,
            static_cast<Tx*>(dx), rows, C);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        layer_norm_backward_dwdb_kernel<Tdy, Tx>
            <<<reduction_grid(rows, C), dim3(kWarp, kLanes), 0, stream>>>(
                static_cast<const Tdy*>(dy), static_cast<const Tx*>(x), mean, rstd, partial_w,
                partial_b, rows, C);
      });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  sum_chunks(partial_w, dw, reduce_chunks(rows), C, stream);
  sum_chunks(partial_b, db, reduce_chunks(rows), C, stream);
}

}  // namespace fused_cuda
