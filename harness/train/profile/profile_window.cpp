#include "harness/train/profile/profile_window.h"

#include <algorithm>

namespace lockstep::train {

ProfileWindow::ProfileWindow(const ProfileConfig& cfg, int64_t warmup_steps, int64_t steps,
                             workloads::GPT model, TraceLog* trace,
                             std::chrono::steady_clock::time_point epoch,
                             const torch::Device& device)
    : cfg_(cfg),
      warmup_steps_(warmup_steps),
      first_(cfg.first_step(warmup_steps)),
      model_(std::move(model)),
      trace_(trace),
      epoch_(epoch),
      layers_(static_cast<int>(model_->config().n_layers), device) {
  ops_.set_device(device);
  const auto window = static_cast<size_t>(std::min(cfg_.window, steps));
  layers_.expect_steps(window);
  ops_.expect_steps(window);
}

void ProfileWindow::start() {
  ops_.start(trace_, epoch_);
  model_->add_hooks(&layers_);
}

void ProfileWindow::stop() {
  ops_.stop();
  model_->remove_hooks(&layers_);
}

// Ends a warm-up: its counts and trace events are dropped (callbacks stay as they are).
void ProfileWindow::discard_warmup() {
  ops_.reset();
  layers_.reset();
  if (trace_) trace_->drop_since(trace_mark_, "op");
}

void ProfileWindow::before_step(int64_t step) {
  if (cfg_.window <= 0) return;
  // The warm-up runs only in an untimed warmup step: it must cost no timed step.
  if (step == first_ - 1 && step <= warmup_steps_ && state_ == State::Idle) {
    trace_mark_ = trace_ ? trace_->size() : 0;
    start();
    state_ = State::WarmingUp;
  }
  if (step == first_ && state_ != State::Profiling) {
    if (state_ == State::WarmingUp)
      discard_warmup();
    else
      start();
    state_ = State::Profiling;
  }
}

void ProfileWindow::after_step() {
  if (state_ != State::Profiling) return;
  layers_.step_done();
  ops_.step_done();
  if (++profiled_ >= cfg_.window) {
    stop();
    state_ = State::Done;
  }
}

void ProfileWindow::finish() {
  if (state_ == State::Profiling) {
    stop();
    state_ = State::Done;
  }
  if (state_ == State::WarmingUp) {  // the run ended before its window: the warm-up's numbers go
    stop();
    discard_warmup();
    state_ = State::Idle;
  }
}

}  // namespace lockstep::train
