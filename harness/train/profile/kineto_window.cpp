#include "harness/train/profile/kineto_window.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "harness/compat/torch_compat.h"

#if defined(LOCKSTEP_WITH_CUDA) && LOCKSTEP_TORCH2
#include <torch/csrc/autograd/profiler_kineto.h>
#define LOCKSTEP_KINETO 1
#else
#define LOCKSTEP_KINETO 0
#endif

namespace lockstep::train {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kMarker = "lockstep::profiled_step";

}  // namespace

struct KinetoWindow::Impl {
  bool running = false;
  std::unique_ptr<at::RecordFunction> marker;  // the open step's range
  std::vector<bool> kept;                      // per closed range, in order
  Clock::time_point first_marker_host;         // maps Kineto's clock onto the trace's

  void open() {
    marker = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (kept.empty()) first_marker_host = Clock::now();
    if (marker->isActive()) marker->before(kMarker);
  }
  void close(bool keep) {
    if (!marker) return;
    marker.reset();  // ends the range
    kept.push_back(keep);
  }
};

KinetoWindow::KinetoWindow() : impl_(std::make_unique<Impl>()) {}
KinetoWindow::~KinetoWindow() {
#if LOCKSTEP_KINETO
  if (impl_->running) {
    impl_->marker.reset();
    try {
      torch::autograd::profiler::disableProfiler();
    } catch (...) {
    }
  }
#endif
}

bool KinetoWindow::start(std::string* why) {
#if LOCKSTEP_KINETO
  namespace pi = torch::profiler::impl;
  try {
    const pi::ProfilerConfig config(pi::ProfilerState::KINETO);
    const std::set<pi::ActivityType> activities{pi::ActivityType::CPU, pi::ActivityType::CUDA};
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    if (why) *why = msg.substr(0, msg.find('\n'));
    return false;
  }
  impl_->running = true;
  impl_->open();
  return true;
#else
  if (why)
    *why = LOCKSTEP_TORCH2 ? "this build has no CUDA LibTorch" : "LibTorch 1.13 (Kineto needs 2.x)";
  return false;
#endif
}

void KinetoWindow::step_done() {
  impl_->close(true);
  impl_->open();
}

void KinetoWindow::drop_open_step() {
  impl_->close(false);
  impl_->open();
}

bool KinetoWindow::stop(OpTable& ops, OpTable& kernels, TraceLog* trace, Clock::time_point epoch) {
#if LOCKSTEP_KINETO
  if (!impl_->running) return false;
  impl_->close(false);  // the range opened after the last step holds no step
  impl_->running = false;
  auto result = torch::autograd::profiler::disableProfiler();
  const auto& events = result->events();

  struct Op {
    std::string name;
    uint64_t start, end, thread;
    double self_ns = 0, total_ns = 0;            // device time of its kernels
    double host_self_ns = 0, host_total_ns = 0;  // its span on the host
    int step = -1;
  };
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // the step markers, in order
  std::vector<Op> cpu_ops;
  std::unordered_map<uint64_t, size_t> op_by_corr;  // an operator's correlation id -> cpu_ops
  for (const auto& e : events) {
    if (e.deviceType() != c10::DeviceType::CPU) continue;
    if (e.name() == kMarker) {
      ranges.emplace_back(e.startNs(), e.endNs());
      continue;
    }
    // CUDA runtime calls (cudaLaunchKernel, ...) link to the operator that made them: not ops.
    if (e.linkedCorrelationId() != 0) continue;
    if (e.correlationId() != 0) op_by_corr[e.correlationId()] = cpu_ops.size();
    cpu_ops.push_back(Op{e.name(), e.startNs(), e.endNs(), e.startThreadId()});
  }
  std::sort(ranges.begin(), ranges.end());
  auto step_of = [&](uint64_t t) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(),
                               std::make_pair(t, std::numeric_limits<uint64_t>::max()));
    if (it == ranges.begin()) return -1;
    --it;
    return t <= it->second ? static_cast<int>(it - ranges.begin()) : -1;
  };
  for (auto& op : cpu_ops) op.step = step_of(op.start);

  // Kernels: device time to the operator that launched them, and to their own table.
  struct Kernel {
    std::string name;
    uint64_t start, dur;
    int64_t stream;
    int step;
  };
  std::vector<Kernel> device;
  for (const auto& e : events) {
    if (e.deviceType() != c10::DeviceType::CUDA) continue;
    const auto it =
        e.linkedCorrelationId() != 0 ? op_by_corr.find(e.linkedCorrelationId()) : op_by_corr.end();
    int step = -1;
    if (it != op_by_corr.end()) {
      cpu_ops[it->second].self_ns += static_cast<double>(e.durationNs());
      step = cpu_ops[it->second].step;
    } else {
      step = step_of(e.startNs());
    }
    device.push_back(Kernel{e.name(), e.startNs(), e.durationNs(), e.deviceResourceId(), step});
  }

  // Totals: each operator's device time plus that of the operators nested in it (same thread).
  std::vector<size_t> order(cpu_ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Op &x = cpu_ops[a], &y = cpu_ops[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start != y.start) return x.start < y.start;
    return x.end > y.end;
  });
  std::vector<size_t> open;
  auto close_top = [&] {
    Op& done = cpu_ops[open.back()];
    done.total_ns += done.self_ns;
    done.host_total_ns = static_cast<double>(done.end - done.start);
    done.host_self_ns += done.host_total_ns;  // minus its children's, subtracted below
    open.pop_back();
    if (!open.empty()) {
      cpu_ops[open.back()].total_ns += done.total_ns;
      cpu_ops[open.back()].host_self_ns -= done.host_total_ns;
    }
  };
  for (size_t idx : order) {
    const Op& op = cpu_ops[idx];
    while (!open.empty() &&
           (cpu_ops[open.back()].thread != op.thread || cpu_ops[open.back()].end <= op.start))
      close_top();
    open.push_back(idx);
  }
  while (!open.empty()) close_top();

  // Kineto without CUDA activity (CUPTI unavailable, or profiling restricted to admin users)
  // records the operators but no kernel: then the operators' host spans, said so by the caller.
  const bool device_times = !device.empty();
  if (!device_times)
    for (auto& op : cpu_ops) op.self_ns = op.host_self_ns, op.total_ns = op.host_total_ns;

  // One OpTable step per kept range, in order.
  std::map<int, std::vector<size_t>> ops_in_step;
  for (size_t i = 0; i < cpu_ops.size(); ++i)
    if (cpu_ops[i].step >= 0) ops_in_step[cpu_ops[i].step].push_back(i);
  std::map<int, std::vector<size_t>> kernels_in_step;
  for (size_t i = 0; i < device.size(); ++i)
    if (device[i].step >= 0) kernels_in_step[device[i].step].push_back(i);
  const size_t n = std::min(ranges.size(), impl_->kept.size());
  for (size_t r = 0; r < n; ++r) {
    if (!impl_->kept[r]) continue;
    for (size_t i : ops_in_step[static_cast<int>(r)])
      ops.add(cpu_ops[i].name, cpu_ops[i].self_ns, cpu_ops[i].total_ns);
    for (size_t i : kernels_in_step[static_cast<int>(r)])
      kernels.add(device[i].name, static_cast<double>(device[i].dur),
                  static_cast<double>(device[i].dur));
    ops.step_done();
    kernels.step_done();
  }

  if (!trace || ranges.empty()) return device_times;
  // Kineto's clock -> the trace's: the first marker opened at first_marker_host.
  const double offset_us =
      std::chrono::duration<double, std::micro>(impl_->first_marker_host - epoch).count() -
      static_cast<double>(ranges.front().first) / 1000.0;
  uint64_t trainer_thread = 0;  // the thread that opened the markers
  for (const auto& e : events)
    if (e.deviceType() == c10::DeviceType::CPU && e.name() == kMarker) {
      trainer_thread = e.startThreadId();
      break;
    }
  std::map<uint64_t, int> lanes{{trainer_thread, 0}};
  for (const auto& op : cpu_ops)
    if (!lanes.count(op.thread)) lanes.emplace(op.thread, static_cast<int>(lanes.size()));
  auto kept = [&](int step) {
    return step >= 0 && static_cast<size_t>(step) < impl_->kept.size() &&
           impl_->kept[static_cast<size_t>(step)];
  };
  for (const auto& op : cpu_ops)
    if (kept(op.step))
      trace->add(TraceEvent{op.name, "op", 'X', static_cast<double>(op.start) / 1000.0 + offset_us,
                            static_cast<double>(op.end - op.start) / 1000.0, lanes[op.thread]});
  for (const auto& k : device)
    if (kept(k.step))
      trace->add(TraceEvent{k.name, "kernel", 'X',
                            static_cast<double>(k.start) / 1000.0 + offset_us,
                            static_cast<double>(k.dur) / 1000.0, 100 + static_cast<int>(k.stream)});
  return device_times;
#else
  (void)ops, (void)kernels, (void)trace, (void)epoch;
  return false;
#endif
}

}  // namespace lockstep::train
