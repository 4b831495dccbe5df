#include "harness/train/profiler.h"

#include <ATen/record_function.h>

#include <algorithm>

namespace lockstep::train {
namespace {

using Clock = std::chrono::steady_clock;

struct Frame {
  const char* name;
  Clock::time_point start;
  double child_ns;
};

// RecordFunction callbacks are plain function pointers: the active profiler of this thread.
thread_local OpTable* t_acc = nullptr;
thread_local std::vector<Frame>* t_stack = nullptr;
thread_local TraceLog* t_trace = nullptr;
thread_local Clock::time_point t_epoch;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (t_stack) t_stack->push_back(Frame{fn.name(), Clock::now(), 0});
  return nullptr;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!t_stack || t_stack->empty()) return;
  const auto end = Clock::now();
  Frame f = t_stack->back();
  t_stack->pop_back();
  const double total = std::chrono::duration<double, std::nano>(end - f.start).count();
  if (!t_stack->empty()) t_stack->back().child_ns += total;
  if (t_acc) t_acc->add(fn.name(), total - f.child_ns, total);
  if (t_trace)
    t_trace->add(TraceEvent{fn.name(), "op", 'X',
                            std::chrono::duration<double, std::micro>(f.start - t_epoch).count(),
                            total / 1000.0, 0});
}

}  // namespace

OpProfiler::OpProfiler() = default;
OpProfiler::~OpProfiler() {
  stop();
}

void OpProfiler::start(TraceLog* trace, Clock::time_point epoch) {
  if (active_) return;
  static thread_local std::vector<Frame> stack;
  stack.clear();
  t_stack = &stack;
  t_acc = &table_;
  t_trace = trace;
  t_epoch = epoch;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_enter, &on_exit).needsInputs(false));
  active_ = true;
}

void OpProfiler::stop() {
  if (!active_) return;
  at::removeCallback(handle_);
  t_stack = nullptr;
  t_acc = nullptr;
  t_trace = nullptr;
  active_ = false;
}

LayerTimer::LayerTimer(int n_blocks)
    : n_blocks_(n_blocks),
      grad_ready_(static_cast<size_t>(n_blocks) + 1),
      fwd_ms_(static_cast<size_t>(n_blocks) + 2, 0.0),
      bwd_ms_(static_cast<size_t>(n_blocks) + 2, 0.0),
      fwd_steps_(fwd_ms_.size()),
      bwd_steps_(bwd_ms_.size()) {}

double LayerTimer::ms_since(Clock::time_point t) const {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void LayerTimer::expect_steps(size_t window) {
  for (auto& v : fwd_steps_) v.reserve(window);
  for (auto& v : bwd_steps_) v.reserve(window);
}

void LayerTimer::step_done() {
  for (size_t i = 0; i < fwd_ms_.size(); ++i)
    fwd_steps_[i].add(fwd_ms_[i]), bwd_steps_[i].add(bwd_ms_[i]);
  std::fill(fwd_ms_.begin(), fwd_ms_.end(), 0.0);
  std::fill(bwd_ms_.begin(), bwd_ms_.end(), 0.0);
}

void LayerTimer::reset() {
  std::fill(fwd_ms_.begin(), fwd_ms_.end(), 0.0);
  std::fill(bwd_ms_.begin(), bwd_ms_.end(), 0.0);
  for (auto& v : fwd_steps_) v.clear();
  for (auto& v : bwd_steps_) v.clear();
}

void LayerTimer::forward_begin() {
  fwd_t0_ = last_fwd_mark_ = Clock::now();
}

void LayerTimer::after_embedding(torch::Tensor& x) {
  fwd_ms_[0] += ms_since(last_fwd_mark_);
  last_fwd_mark_ = Clock::now();
  if (x.requires_grad()) x.register_hook([this](torch::Tensor) { grad_ready_[0] = Clock::now(); });
}

void LayerTimer::after_forward(int unit, torch::Tensor& out) {
  if (unit == 0) return;  // the head is timed with the loss, up to forward_end()
  fwd_ms_[static_cast<size_t>(unit)] += ms_since(last_fwd_mark_);
  last_fwd_mark_ = Clock::now();
  if (out.requires_grad())
    out.register_hook(
        [this, unit](torch::Tensor) { grad_ready_[static_cast<size_t>(unit)] = Clock::now(); });
}

void LayerTimer::forward_end() {
  fwd_ms_[static_cast<size_t>(n_blocks_) + 1] += ms_since(last_fwd_mark_);
}

void LayerTimer::backward_begin() {
  bwd_t0_ = Clock::now();
}

void LayerTimer::backward_end() {
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const size_t L = static_cast<size_t>(n_blocks_);
  bwd_ms_[L + 1] += ms(bwd_t0_, grad_ready_[L]);  // head + loss: until the last block's output grad
  for (size_t i = L; i >= 1; --i)
    bwd_ms_[i] += ms(grad_ready_[i], grad_ready_[i - 1]);  // block i-1
  bwd_ms_[0] += ms(grad_ready_[0], Clock::now());          // embedding
}

std::vector<UnitCost> LayerTimer::costs() const {
  std::vector<UnitCost> out;
  if (fwd_steps_.front().seen() == 0) return out;  // no closed step
  for (size_t i = 0; i < fwd_ms_.size(); ++i) {
    std::string name = i == 0                    ? "embedding"
                       : i == fwd_ms_.size() - 1 ? "head+loss"
                                                 : "block " + std::to_string(i - 1);
    out.push_back(UnitCost{name, fwd_steps_[i].median(), bwd_steps_[i].median()});
  }
  return out;
}

}  // namespace lockstep::train
