// Every difference between LibTorch 1.13 (Debian 12) and 2.x (pip / official builds) lives here,
// so the rest of the code base is written once.
//
//   1.13                                   2.x
//   at::_scaled_dot_product_attention      at::scaled_dot_product_attention
//   autocast::set_cpu_enabled(...)         autocast::set_autocast_enabled(kCPU, ...)
//   c10d::ProcessGroupGloo : ProcessGroup  c10d::ProcessGroupGloo : Backend (under USE_C10D_GLOO)
//   c10::Event has no elapsedTime          c10::Event::elapsedTime (device-side timing)
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/StorageImpl.h>
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if !defined(TORCH_VERSION_MAJOR)
#include <torch/version.h>
#endif

#define LOCKSTEP_TORCH2 (TORCH_VERSION_MAJOR >= 2)

#if defined(LOCKSTEP_WITH_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

#if defined(USE_C10D_NCCL) && __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define LOCKSTEP_HAVE_NCCL 1
#else
#define LOCKSTEP_HAVE_NCCL 0
#endif

namespace lockstep::compat {

inline const char* torch_version() {
  return TORCH_VERSION;
}

// Causal scaled-dot-product attention, (B, H, T, hd) -> (B, H, T, hd).
inline at::Tensor sdpa_causal(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if LOCKSTEP_TORCH2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                                       /*need_attn_weights=*/false,
                                                       /*is_causal=*/true));
#endif
}

// Makes `index` this process's current CUDA device (NCCL and the caching allocator follow it).
// Callers check the device is CUDA; a CPU-only build never gets here.
inline void cuda_set_device(int index) {
#if defined(LOCKSTEP_WITH_CUDA)
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

// Autocast on one device type for lower-precision GEMMs.
inline void set_autocast(at::DeviceType device, bool enabled, at::ScalarType dtype) {
#if LOCKSTEP_TORCH2
  at::autocast::set_autocast_enabled(device, enabled);
  if (enabled) at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == at::kCPU) {
    at::autocast::set_cpu_enabled(enabled);
    if (enabled) at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    if (enabled) at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

// at::Allocator::allocate is const in 1.13 and not in 2.x, where copy_data is also required.
#if LOCKSTEP_TORCH2
#define LOCKSTEP_ALLOCATE_CONST
#define LOCKSTEP_ALLOCATOR_COPY_DATA                                              \
  void copy_data(void* dest, const void* src, std::size_t count) const override { \
    default_copy_data(dest, src, count);                                          \
  }
#else
#define LOCKSTEP_ALLOCATE_CONST const
#define LOCKSTEP_ALLOCATOR_COPY_DATA
#endif

// The type c10d's backends derive from (collectives are called on it directly).
#if LOCKSTEP_TORCH2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

// Free / re-grow the memory behind a tensor without touching its TensorImpl or version counter
// (ZeRO-3 frees gathered parameters between uses; autograd's saved views keep working).
inline void resize_storage_bytes(const at::Tensor& t, size_t nbytes) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  if (nbytes == 0) {
    s->set_data_ptr_noswap(at::DataPtr(nullptr, s->device()));
  } else {
    s->set_data_ptr_noswap(s->allocator()->allocate(nbytes));
  }
  s->set_nbytes(nbytes);
}

}  // namespace lockstep::compat
