#include "harness/train/memory.h"

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <new>
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

MemoryStats memory_stats(const torch::Device& device) {
  MemoryStats m;
#if defined(LOCKSTEP_WITH_CUDA)
  if (device.is_cuda()) {
    const auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    m.peak_allocated_bytes = s.allocated_bytes[0].peak;
    m.peak_reserved_bytes = s.reserved_bytes[0].peak;
    m.fragmentation_bytes = s.reserved_bytes[0].peak - s.allocated_bytes[0].peak;
    m.alloc_retries = s.num_alloc_retries;
    m.ooms = s.num_ooms;
    return m;
  }
#endif
  m.peak_allocated_bytes = peak_tensor_bytes(device);
  return m;
}

std::vector<RankMemory> gather_memory(dist::Comm& comm, const MemoryStats& mine, bool ranks_meet) {
  RankMemory own{comm.rank(),
                 mine.peak_allocated_bytes,
                 mine.peak_reserved_bytes,
                 mine.fragmentation_bytes,
                 mine.alloc_retries,
                 mine.ooms};
  if (!ranks_meet || comm.world() == 1) return {own};
  // (W, 5): each rank fills its own row; the sum over ranks is every row. -1 = unknown.
  const int64_t W = comm.world();
  std::vector<int64_t> rows(static_cast<size_t>(W * 5), 0);
  int64_t* row = rows.data() + own.rank * 5;
  row[0] = own.peak_allocated_bytes;
  row[1] = own.peak_reserved_bytes.value_or(-1);
  row[2] = own.fragmentation_bytes.value_or(-1);
  row[3] = own.alloc_retries;
  row[4] = own.ooms;
  auto t = torch::tensor(rows, torch::kInt64).view({W, 5}).to(comm.device());
  try {
    comm.allreduce_sum(t, "all_reduce(memory figures)");
  } catch (const std::exception&) {
    return {own};  // a rank that failed late: keep what this one knows
  }
  t = t.cpu();
  std::vector<RankMemory> out;
  for (int64_t r = 0; r < W; ++r) {
    const int64_t* v = t.data_ptr<int64_t>() + r * 5;
    RankMemory m;
    m.rank = r;
    m.peak_allocated_bytes = v[0];
    if (v[1] >= 0) m.peak_reserved_bytes = v[1];
    if (v[2] >= 0) m.fragmentation_bytes = v[2];
    m.alloc_retries = v[3];
    m.ooms = v[4];
    out.push_back(m);
  }
  return out;
}

std::string allocator_summary(const torch::Device& device) {
  auto mib = [](int64_t b) { return std::to_string(b / (1024 * 1024)) + " MiB"; };
#if defined(LOCKSTEP_WITH_CUDA)
  if (device.is_cuda()) {
    const auto s =
        c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
    return "allocator on " + device.str() + ": allocated " + mib(s.allocated_bytes[0].current) +
           " (peak " + mib(s.allocated_bytes[0].peak) + "), reserved " +
           mib(s.reserved_bytes[0].current) + " (peak " + mib(s.reserved_bytes[0].peak) +
           "), active " + mib(s.active_bytes[0].current) + ", inactive split " +
           mib(s.inactive_split_bytes[0].current) + " (fragmentation), " +
           std::to_string(s.segment[0].current) + " segments, " +
           std::to_string(s.num_alloc_retries) + " allocation retries, " +
           std::to_string(s.num_ooms) + " OOMs";
  }
#endif
  return "allocator on " + device.str() + ": tensors " + mib(current_tensor_bytes(device)) +
         " (peak " + mib(peak_tensor_bytes(device)) + "), process peak RSS " +
         mib(peak_rss_bytes());
}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) || dynamic_cast<const std::bad_alloc*>(&e))
    return true;
  const std::string what = e.what();
  return what.find("out of memory") != std::string::npos;
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
