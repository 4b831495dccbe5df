#include "harness/train/memory.h"

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>

#if defined(LOCKSTEP_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace lockstep::train {
namespace {

std::atomic<int64_t> g_live{0}, g_peak{0};
at::Allocator* g_inner = nullptr;
std::mutex g_mu;
std::unordered_map<void*, size_t>* g_sizes = nullptr;  // leaked on purpose: frees can run at exit

// Context == data pointer, so LibTorch's raw_allocate/raw_deallocate interface (used by oneDNN)
// keeps working; sizes live in a side table.
void tracked_delete(void* ptr) {
  if (!ptr) return;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_sizes->find(ptr);
    if (it != g_sizes->end()) n = it->second, g_sizes->erase(it);
  }
  g_live.fetch_sub(static_cast<int64_t>(n));
  g_inner->raw_deallocate(ptr);
}

// Wraps the default CPU allocator, counting live and peak bytes.
struct TrackingAllocator final : at::Allocator {
  at::DataPtr allocate(size_t n) LOCKSTEP_ALLOCATE_CONST override {
    void* data = g_inner->raw_allocate(n);
    {
      std::lock_guard<std::mutex> lock(g_mu);
      (*g_sizes)[data] = n;
    }
    int64_t live = g_live.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
    int64_t peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
    return at::DataPtr(data, data, &tracked_delete, at::Device(at::kCPU));
  }
  at::DeleterFnPtr raw_deleter() const override { return &tracked_delete; }
  LOCKSTEP_ALLOCATOR_COPY_DATA
};

}  // namespace

void install_memory_tracking() {
  if (std::getenv("LOCKSTEP_NO_MEMORY_TRACKING")) return;
  static TrackingAllocator* tracker = [] {
    g_inner = c10::GetDefaultCPUAllocator();
    g_sizes = new std::unordered_map<void*, size_t>();
    auto* t = new TrackingAllocator();
    c10::SetCPUAllocator(t, /*priority=*/200);
    return t;
  }();
  (void)tracker;
}

int64_t current_tensor_bytes(const torch::Device& device) {
#if defined(LOCKSTEP_WITH_CUDA)
  if (device.is_cuda()) {
    auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return s.allocated_bytes[0].current;
  }
#endif
  (void)device;
  return g_live.load();
}

int64_t peak_tensor_bytes(const torch::Device& device) {
#if defined(LOCKSTEP_WITH_CUDA)
  if (device.is_cuda()) {
    auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return s.allocated_bytes[0].peak;
  }
#endif
  (void)device;
  return g_peak.load();
}

void reset_peak_tensor_bytes(const torch::Device& device) {
#if defined(LOCKSTEP_WITH_CUDA)
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index() < 0 ? 0 : device.index());
    return;
  }
#endif
  (void)device;
  g_peak.store(g_live.load());
}

int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

}  // namespace lockstep::train
