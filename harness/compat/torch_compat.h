// Every difference between the LibTorch versions Lockstep builds with lives here, so the rest of
// the code base is written once.
//
// Supported: LibTorch 1.13 (Debian 12, CPU: what `./lockstep` builds with) and LibTorch 2.1 or
// later (pip / official builds, CPU or CUDA). 2.0 is refused at compile time: its c10d and
// profiler headers are neither generation. The test suite compiles every source against 1.13 (the
// build), Debian trixie's 2.6 headers (CPU, and CUDA with -DLOCKSTEP_WITH_CUDA -DUSE_C10D_NCCL)
// and Debian forky's newer CPU headers (tools/check-torch2-api.sh); other minors are covered by
// construction, each guard below naming the version its API appeared in.
//
//   API                                  before                          from
//   scaled_dot_product_attention         at::_scaled_dot_product_...     2.0
//   c10d::ProcessGroupGloo derives from  c10d::ProcessGroup              c10d::Backend (2.0)
//   autocast setters                     set_cpu_enabled, set_enabled,   set_autocast_enabled(
//                                        set_autocast_{cpu,gpu}_dtype    device, ...) (2.4)
//   at::Allocator::allocate              const                           non-const (2.3)
//   at::Allocator::copy_data             absent                          pure virtual (2.3)
//   device-side timing                   at::cuda::CUDAEvent (every version; c10::Event gained
//                                        elapsedTime only in 2.4, so it is not used)
//   TF32                                 setAllowTF32CuBLAS / CuDNN: still the C++ setters in 2.9+,
//                                        where they also write the new fp32_precision entries
//                                        ("cuda"/"matmul", "cuda"/"conv"/"rnn"), so the legacy and
//                                        new views never disagree; Lockstep never calls the new API
//                                        (mixing the two is what 2.9+ rejects)
#pragma once

#include <ATen/autocast_mode.h>
#include <c10/core/StorageImpl.h>
#include <torch/torch.h>

// pip's LibTorch wheels ship no Gloo headers (ProcessGroupGloo.hpp includes them), and another
// revision's would not match the library: there the build defines LOCKSTEP_NO_GLOO (CMakeLists.txt)
// and the gloo backend is unavailable and says so (the GPU path uses NCCL).
#if !defined(LOCKSTEP_NO_GLOO) && __has_include(<gloo/algorithm.h>)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#define LOCKSTEP_HAVE_GLOO 1
#else
#define LOCKSTEP_HAVE_GLOO 0
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if !defined(TORCH_VERSION_MAJOR)
#include <torch/version.h>
#endif

#define LOCKSTEP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||           \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
#define LOCKSTEP_TORCH2 LOCKSTEP_TORCH_AT_LEAST(2, 0)
#if LOCKSTEP_TORCH2 && !LOCKSTEP_TORCH_AT_LEAST(2, 1)
#error "LibTorch 2.0 is not supported: build with 1.13 or with 2.1 or later"
#endif

#if defined(LOCKSTEP_WITH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/profiler/stubs/base.h>
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

// LibTorch's fused AdamW kernel ([optim] impl = "fused"): one update of p, m, v from the gradient g
// at 1-based step t, without weight decay (the caller applies it, masked). at::_fused_adamw_ with
// a double lr is in every supported 2.x (2.1 and later); its step count is a tensor on p's device.
inline void fused_adam_step(at::Tensor& p, const at::Tensor& g, at::Tensor& m, at::Tensor& v,
                            int64_t t, double lr, double beta1, double beta2, double eps) {
#if LOCKSTEP_TORCH2
  const at::Tensor step = at::full({}, static_cast<double>(t), p.options().dtype(at::kFloat));
  at::_fused_adamw_({p}, {g}, {m}, {v}, /*max_exp_avg_sqs=*/{}, {step}, lr, beta1, beta2,
                    /*weight_decay=*/0.0, eps, /*amsgrad=*/false, /*maximize=*/false);
#else
  (void)p, (void)g, (void)m, (void)v, (void)t, (void)lr, (void)beta1, (void)beta2, (void)eps;
  throw std::runtime_error("the fused AdamW kernel needs LibTorch 2.1 or later (this is " +
                           std::string(TORCH_VERSION) + ")");
#endif
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

// The kernel scaled_dot_product_attention picks for these inputs under the current global
// context (deterministic mode, enabled backends, dtype, device): the same choice function its
// dispatch calls. "math", "flash_attention", "efficient_attention", "cudnn_attention", ...
inline std::string sdpa_backend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if LOCKSTEP_TORCH2
  static const char* const kNames[] = {"math", "flash_attention", "efficient_attention",
                                       "cudnn_attention", "overrideable"};
  const int64_t c = at::_fused_sdp_choice(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
  if (c >= 0 && c < 5) return kNames[c];
  return "unknown (choice " + std::to_string(c) + ")";
#else
  (void)q, (void)k, (void)v;
  return "math (LibTorch 1.13: SDPA's own math fallback)";
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
#if LOCKSTEP_TORCH_AT_LEAST(2, 4)
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

// at::Allocator::allocate is const before 2.3 and not from 2.3, where copy_data is also required.
#if LOCKSTEP_TORCH_AT_LEAST(2, 3)
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

// A timing mark on the current CUDA stream (device time, no host sync), or nothing without CUDA.
// Read with ms_until() once both marks have completed (after the step's host sync).
class DeviceEvent {
 public:
#if defined(LOCKSTEP_WITH_CUDA)
  DeviceEvent() : event_(cudaEventDefault) {}  // timing on (CUDAEvent's default turns it off)
  void record() {
    event_.record();
  }
  bool recorded() const {
    return event_.isCreated();
  }
  void synchronize() const {
    event_.synchronize();
  }
  double ms_until(const DeviceEvent& later) const {
    return event_.elapsed_time(later.event_);
  }

 private:
  at::cuda::CUDAEvent event_;
#else
  void record() {}
  bool recorded() const {
    return false;
  }
  void synchronize() const {}
  double ms_until(const DeviceEvent&) const {
    return 0;
  }
#endif
};

// An NVTX range (Nsight Systems) through LibTorch's CUDA profiler stubs; a no-op when off or
// without CUDA. RAII: closes on scope exit.
class NvtxRange {
 public:
  NvtxRange(bool on, const char* name) : on_(on) {
#if defined(LOCKSTEP_WITH_CUDA)
    if (on_) torch::profiler::impl::cudaStubs()->rangePush(name);
#else
    (void)name;
#endif
  }
  ~NvtxRange() {
    pop();
  }
  // Ends the range early (once).
  void pop() {
#if defined(LOCKSTEP_WITH_CUDA)
    if (on_) torch::profiler::impl::cudaStubs()->rangePop();
#endif
    on_ = false;
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool on_;
};

}  // namespace lockstep::compat
