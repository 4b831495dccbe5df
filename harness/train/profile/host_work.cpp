#include "harness/train/profile/host_work.h"

#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "harness/compat/torch_compat.h"

#if defined(LOCKSTEP_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace lockstep::train {

namespace {

// LibTorch's CPU allocator with a count in front; installed once per process, never removed
// (tensors it handed out may outlive any hook).
class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* base) : base_(base) {}
#if LOCKSTEP_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t n) override {
    count.fetch_add(1, std::memory_order_relaxed);
    return base_->allocate(n);
  }
  void copy_data(void* dest, const void* src, std::size_t n) const override {
    base_->copy_data(dest, src, n);
  }
#else
  c10::DataPtr allocate(size_t n) const override {
    count.fetch_add(1, std::memory_order_relaxed);
    return base_->allocate(n);
  }
#endif
  c10::DeleterFnPtr raw_deleter() const override {
    return base_->raw_deleter();
  }
  mutable std::atomic<int64_t> count{0};

 private:
  c10::Allocator* base_;
};

CountingCpuAllocator& cpu_allocator() {
  static CountingCpuAllocator* a = [] {
    auto* alloc = new CountingCpuAllocator(c10::GetCPUAllocator());  // lives as long as tensors
    c10::SetCPUAllocator(alloc, /*priority=*/UINT8_MAX);
    return alloc;
  }();
  return *a;
}

// Allocations so far in this process: the CPU allocator's, plus the CUDA caching allocator's
// requests on the current device.
int64_t allocations() {
  int64_t n = cpu_allocator().count.load(std::memory_order_relaxed);
#if defined(LOCKSTEP_WITH_CUDA)
  if (c10::cuda::device_count() > 0) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::cuda::current_device());
    n += stats.allocation[0].allocated;  // [0]: the aggregate over pool kinds
  }
#endif
  return n;
}

bool is_sync(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (std::strcmp(name, "aten::_local_scalar_dense") == 0) return true;
  if (std::strcmp(name, "aten::copy_") != 0) return false;
  const auto in = fn.inputs();  // copy_(self, src, non_blocking)
  return in.size() >= 2 && in[0].isTensor() && in[1].isTensor() &&
         in[0].toTensor().device().is_cpu() && !in[1].toTensor().device().is_cpu();
}

bool is_weight_cast(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::_to_copy") != 0) return false;
  const auto in = fn.inputs();  // _to_copy(self, dtype, ...)
  if (in.empty() || !in[0].isTensor()) return false;
  const auto& t = in[0].toTensor();
  if (!t.defined()) return false;
  const auto& leaf = t.is_view() ? t._base() : t;  // a weight's transpose is a view of it
  return leaf.is_leaf() && leaf.requires_grad();
}

// The operators open on this thread, outermost first (names are static strings).
std::vector<const char*>& open_ops() {
  thread_local std::vector<const char*> stack;
  return stack;
}

}  // namespace

struct HostWorkHook::Counter {
  std::mutex mu;
  HostWork* work = nullptr;
  std::atomic<int> phase{static_cast<int>(Phase::Other)};
  int64_t allocs_mark = 0;
  at::CallbackHandle handle = 0;

  // The allocations since the last mark go to the phase that was open.
  void book_allocations() {
    const int64_t now = allocations();
    work->allocs_in[phase.load()] += now - allocs_mark;
    allocs_mark = now;
  }
};

namespace {

std::atomic<HostWorkHook::Counter*>* active() {
  static std::atomic<HostWorkHook::Counter*> a{nullptr};
  return &a;
}

}  // namespace

HostWorkHook::HostWorkHook(int64_t first, int64_t last)
    : first_(first), last_(last), counter_(std::make_unique<Counter>()) {
  counter_->work = &work_;
  cpu_allocator();
}

HostWorkHook::~HostWorkHook() {
  if (counter_->handle) at::removeCallback(counter_->handle);
  Counter* self = counter_.get();
  active()->compare_exchange_strong(self, nullptr);
}

void HostWorkHook::before_step(int64_t step, StepRecord&) {
  if (!counts(step)) return;
  Counter* expected = nullptr;
  if (!active()->compare_exchange_strong(expected, counter_.get()))
    throw std::logic_error("HostWorkHook: another one is already counting in this process");
  counter_->phase = static_cast<int>(Phase::Other);
  counter_->allocs_mark = allocations();
  auto on_enter = [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
    Counter* c = active()->load(std::memory_order_acquire);
    if (!c) return nullptr;
    const int phase = c->phase.load();
    const bool sync = is_sync(fn), weight_cast = is_weight_cast(fn);
    auto& stack = open_ops();
    const char* root = stack.empty() ? fn.name() : stack.front();
    stack.push_back(fn.name());
    std::lock_guard<std::mutex> lock(c->mu);
    ++c->work->ops[fn.name()][phase];
    ++c->work->roots[fn.name()][root];
    ++c->work->ops_in[phase];
    if (sync) ++c->work->syncs_in[phase];
    if (weight_cast) ++c->work->weight_casts_in[phase];
    return nullptr;
  };
  auto on_exit = [](const at::RecordFunction&, at::ObserverContext*) {
    if (!open_ops().empty()) open_ops().pop_back();
  };
  counter_->handle = at::addThreadLocalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                                    .needsInputs(true)
                                                    .scopes({at::RecordScope::FUNCTION}));
}

StepNeeds HostWorkHook::needs(int64_t step) const {
  StepNeeds n;
  n.untimed = counts(step);  // a callback per operator: not the step's time
  return n;
}

void HostWorkHook::on_phase(Phase phase, Edge edge, StepView& view) {
  if (!counts(view.step) || active()->load() != counter_.get()) return;
  std::lock_guard<std::mutex> lock(counter_->mu);
  counter_->book_allocations();
  // Between two phases the step's remaining time runs: `other`, as the phase timer books it.
  counter_->phase = static_cast<int>(edge == Edge::Begin ? phase : Phase::Other);
}

void HostWorkHook::after_step(int64_t step, const PhaseTimer&, const StepRecord&) {
  if (!counts(step) || active()->load() != counter_.get()) return;
  at::removeCallback(counter_->handle);
  counter_->handle = 0;
  {
    std::lock_guard<std::mutex> lock(counter_->mu);
    counter_->book_allocations();
    ++work_.steps;
  }
  active()->store(nullptr);
}

void HostWorkHook::finish(TrainOutcome& out) {
  if (work_.steps > 0) out.host_work = work_;
}

}  // namespace lockstep::train
