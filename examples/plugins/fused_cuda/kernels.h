// The CUDA kernels of the example plugin, as host-side launchers on raw device buffers (no
// LibTorch types here: fused_cuda.cpp is the glue that checks tensors and makes them autograd
// functions; kernels.cu includes only c10's CUDA stream and error headers). Each launcher runs on
// the current CUDA stream of `device`, with that device current, and throws c10::Error if a launch
// fails.
//
// Storage types: fp32, or bf16 (round to nearest even, as c10::BFloat16). Math and every
// accumulation are fp32. Rows are contiguous, the last dimension dense. Sums over rows (the bias
// and LayerNorm parameter gradients) go through `partial` buffers of reduce_chunks(rows) x width
// fp32, one row of partial sums per fixed chunk of rows, then added up in chunk order: no atomics,
// so every result is bitwise reproducible on one device.
#pragma once

#include <cstdint>

namespace fused_cuda {

enum class Dt { F32, BF16 };

// Rows per partial sum of a reduction over rows: the partial buffers have reduce_chunks(rows)
// rows.
int64_t reduce_chunks(int64_t rows);

// y = gelu(h + b), gelu(u) = u/2 (1 + erf(u / sqrt 2)) in fp32. h, y: (rows, M) of `dt`; b: (M)
// fp32.
void bias_gelu_forward(const void* h, const float* b, void* y, Dt dt, int64_t rows, int64_t M,
                       int device);
// du = dy * gelu'(h + b) (recomputed from h: no saved activation beyond h), in `dt`;
// db = sum over the rows of du as stored (fp32, M). partial: reduce_chunks(rows) x M fp32.
void bias_gelu_backward(const void* dy, const void* h, const float* b, void* du, float* partial,
                        float* db, Dt dt, int64_t rows, int64_t M, int device);

// LayerNorm over the last dimension: per row mean and rstd = 1/sqrt(var + eps) in fp32 (two
// passes over the row, biased variance), y = (x - mean) rstd w + b written in `ydt`; mean, rstd:
// (rows) fp32, saved for the backward. w, b: (C) fp32.
void layer_norm_forward(const void* x, Dt xdt, const float* w, const float* b, void* y, Dt ydt,
                        float* mean, float* rstd, float eps, int64_t rows, int64_t C, int device);
// With xhat = (x - mean) rstd and g = dy w:
//   dx = rstd (g - mean_C(g) - xhat mean_C(g xhat))   in `xdt`
//   dw = sum over rows of dy xhat,  db = sum over rows of dy   (fp32, C)
// partial_w, partial_b: reduce_chunks(rows) x C fp32.
void layer_norm_backward(const void* dy, Dt dydt, const void* x, Dt xdt, const float* w,
                         const float* mean, const float* rstd, void* dx, float* partial_w,
                         float* partial_b, float* dw, float* db, int64_t rows, int64_t C,
                         int device);

}  // namespace fused_cuda
