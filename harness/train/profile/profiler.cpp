#include "harness/train/profile/profiler.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "harness/train/profile/kineto_window.h"

namespace lockstep::train {
namespace {

using Clock = std::chrono::steady_clock;

struct Frame {
  const char* name;
  Clock::time_point start;
  double child_ns;
};

}  // namespace

// What the RecordFunction callbacks feed. They are plain function pointers, and LibTorch hands
// them (with at::ThreadLocalState) to every thread that runs work for this one: on CUDA autograd
// runs the backward on a device thread of its own. So the state they feed cannot be thread_local:
// one active session, shared and locked; only each thread's stack of open operators is its own.
struct OpProfiler::Session {
  std::mutex mu;
  OpTable* table = nullptr;
  TraceLog* trace = nullptr;
  Clock::time_point epoch;
  uint64_t generation = 0;
  std::thread::id owner;  // the thread that started the window: trace lane 0
  int next_lane = 1;      // other threads: lanes 1, 2, ... in order of appearance
};

namespace {

std::atomic<OpProfiler::Session*> g_session{nullptr};
std::atomic<uint64_t> g_generation{0};

struct ThreadStack {
  uint64_t generation = 0;  // the session these frames belong to
  int lane = -1;
  std::vector<Frame> frames;
};
thread_local ThreadStack t_stack;

// This thread's stack for session `s` (a stale one from an earlier window starts over).
ThreadStack& stack_for(OpProfiler::Session& s) {
  ThreadStack& st = t_stack;
  if (st.generation != s.generation) {
    st.frames.clear();
    st.generation = s.generation;
    st.lane = -1;
  }
  return st;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  OpProfiler::Session* s = g_session.load(std::memory_order_acquire);
  if (!s) return nullptr;
  stack_for(*s).frames.push_back(Frame{fn.name(), Clock::now(), 0});
  return nullptr;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  OpProfiler::Session* s = g_session.load(std::memory_order_acquire);
  if (!s) return;
  ThreadStack& st = stack_for(*s);
  if (st.frames.empty()) return;
  const auto end = Clock::now();
  Frame f = st.frames.back();
  st.frames.pop_back();
  const double total = std::chrono::duration<double, std::nano>(end - f.start).count();
  if (!st.frames.empty()) st.frames.back().child_ns += total;
  std::lock_guard<std::mutex> lock(s->mu);
  if (st.lane < 0) st.lane = std::this_thread::get_id() == s->owner ? 0 : s->next_lane++;
  if (s->table) s->table->add(fn.name(), total - f.child_ns, total);
  if (s->trace)
    s->trace->add(TraceEvent{fn.name(), "op", 'X',
                             std::chrono::duration<double, std::micro>(f.start - s->epoch).count(),
                             total / 1000.0, st.lane});
}

}  // namespace

OpProfiler::OpProfiler() : session_(std::make_unique<Session>()) {}
OpProfiler::~OpProfiler() {
  stop();
}

void OpProfiler::set_device(const torch::Device& device) {
  cuda_ = device.is_cuda();
}

void OpProfiler::start(TraceLog* trace, Clock::time_point epoch) {
  if (active_) return;
  if (cuda_) {
    auto k = std::make_unique<KinetoWindow>();
    if (k->start(&kineto_unavailable_)) {
      kineto_ = std::move(k);
      trace_ = trace;
      epoch_ = epoch;
      active_ = true;
      return;
    }
  }
  OpProfiler::Session* expected = nullptr;
  session_->table = &table_;
  session_->trace = trace;
  session_->epoch = epoch;
  session_->generation = ++g_generation;
  session_->owner = std::this_thread::get_id();
  session_->next_lane = 1;
  if (!g_session.compare_exchange_strong(expected, session_.get()))
    throw std::logic_error("OpProfiler: another profiler is already recording in this process");
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).needsInputs(false));
  active_ = true;
}

void OpProfiler::stop() {
  if (!active_) return;
  if (kineto_) {
    if (!kineto_->stop(table_, kernels_, trace_, epoch_))
      kineto_unavailable_ = "Kineto recorded no CUDA kernel: CUPTI unavailable or restricted";
    kineto_.reset();
  } else {
    at::removeCallback(handle_);
    g_session.store(nullptr, std::memory_order_release);
  }
  active_ = false;
}

void OpProfiler::reset() {
  if (kineto_) kineto_->drop_open_step();
  std::lock_guard<std::mutex> lock(session_->mu);
  table_.reset();
  kernels_.reset();
}

void OpProfiler::step_done() {
  if (kineto_) {
    kineto_->step_done();  // the step's operators are attributed when the window stops
    return;
  }
  std::lock_guard<std::mutex> lock(session_->mu);
  table_.step_done();
}

std::string OpProfiler::clock() const {
  if (!cuda_) return "host: operators' self time on the host clock (RecordFunction)";
  if (kineto_unavailable_.empty())
    return "device: the CUDA kernels each operator launched, on the device clock (Kineto, CUDA "
           "activity); per-kernel times in top_kernels";
  return "host: operators' launch time on the host clock, not kernel time (Kineto unavailable: " +
         kineto_unavailable_ + ")";
}

// ---------------------------------------------------------------------------------------------
// LayerTimer

struct LayerTimer::Stamp {
  Clock::time_point host;
  compat::DeviceEvent event;
};

LayerTimer::LayerTimer(int n_blocks, const torch::Device& device)
    : n_blocks_(n_blocks),
      fwd_steps_(static_cast<size_t>(n_blocks) + 2),
      bwd_steps_(static_cast<size_t>(n_blocks) + 2) {
#if defined(LOCKSTEP_WITH_CUDA)
  device_events_ = device.is_cuda();
#else
  (void)device;
#endif
}

LayerTimer::~LayerTimer() = default;

std::shared_ptr<LayerTimer::Stamp> LayerTimer::stamp() const {
  auto s = std::make_shared<Stamp>();
  s->host = Clock::now();
  if (device_events_) s->event.record();  // on the current stream of this thread
  return s;
}

double LayerTimer::ms(const std::shared_ptr<Stamp>& a, const std::shared_ptr<Stamp>& b) const {
  if (!a || !b) return 0;
  if (device_events_) return a->event.ms_until(b->event);
  return std::chrono::duration<double, std::milli>(b->host - a->host).count();
}

void LayerTimer::expect_steps(size_t window) {
  for (auto& v : fwd_steps_) v.reserve(window);
  for (auto& v : bwd_steps_) v.reserve(window);
}

void LayerTimer::step_done() {
  const size_t L = static_cast<size_t>(n_blocks_);
  std::vector<double> fwd(L + 2, 0.0), bwd(L + 2, 0.0);
  for (const auto& m : micros_) {
    if (device_events_ && m.bwd_end) m.bwd_end->event.synchronize();
    // forward: [begin, embedding done, block 0 done, ..., block L-1 done, loss done]
    for (size_t i = 0; i + 1 < m.fwd.size(); ++i) fwd[i] += ms(m.fwd[i], m.fwd[i + 1]);
    // backward runs head + loss, then block L-1 .. block 0, then the embedding
    bwd[L + 1] += ms(m.bwd_begin, m.grad_ready[L]);
    for (size_t i = L; i >= 1; --i) bwd[i] += ms(m.grad_ready[i], m.grad_ready[i - 1]);
    bwd[0] += ms(m.grad_ready[0], m.bwd_end);
  }
  micros_.clear();
  for (size_t i = 0; i < fwd.size(); ++i) fwd_steps_[i].add(fwd[i]), bwd_steps_[i].add(bwd[i]);
}

void LayerTimer::reset() {
  micros_.clear();
  for (auto& v : fwd_steps_) v.clear();
  for (auto& v : bwd_steps_) v.clear();
}

void LayerTimer::forward_begin() {
  Micro m;
  m.fwd.resize(static_cast<size_t>(n_blocks_) + 3);
  m.grad_ready.resize(static_cast<size_t>(n_blocks_) + 1);
  m.fwd[0] = stamp();
  micros_.push_back(std::move(m));
}

void LayerTimer::after_embedding(torch::Tensor& x) {
  if (micros_.empty()) return;
  micros_.back().fwd[1] = stamp();
  const size_t m = micros_.size() - 1;
  if (x.requires_grad())
    x.register_hook([this, m](torch::Tensor) { micros_[m].grad_ready[0] = stamp(); });
}

void LayerTimer::after_forward(int unit, torch::Tensor& out) {
  if (unit == 0 || micros_.empty()) return;  // the head is timed with the loss, to forward_end()
  const size_t u = static_cast<size_t>(unit), m = micros_.size() - 1;
  micros_.back().fwd[u + 1] = stamp();
  // Runs on the thread autograd runs this backward on (on CUDA a device thread of its own) with
  // that stream current: the event marks the point in the stream where this gradient is done.
  if (out.requires_grad())
    out.register_hook([this, m, u](torch::Tensor) { micros_[m].grad_ready[u] = stamp(); });
}

void LayerTimer::forward_end() {
  if (!micros_.empty()) micros_.back().fwd.back() = stamp();
}

void LayerTimer::backward_begin() {
  if (!micros_.empty()) micros_.back().bwd_begin = stamp();
}

void LayerTimer::backward_end() {
  if (!micros_.empty()) micros_.back().bwd_end = stamp();
}

std::vector<UnitCost> LayerTimer::costs() const {
  std::vector<UnitCost> out;
  if (fwd_steps_.front().seen() == 0) return out;  // no closed step
  for (size_t i = 0; i < fwd_steps_.size(); ++i) {
    std::string name = i == 0                       ? "embedding"
                       : i == fwd_steps_.size() - 1 ? "head+loss"
                                                    : "block " + std::to_string(i - 1);
    out.push_back(UnitCost{name, fwd_steps_[i].median(), bwd_steps_[i].median()});
  }
  return out;
}

}  // namespace lockstep::train
