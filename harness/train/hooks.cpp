#include "harness/train/hooks.h"

#include <iostream>
#include <string>

#include "harness/train/phase_timer.h"

namespace lockstep::train {

void TurnHook::before_step(int64_t, StepRecord& rec) {
  progress_.phase = "turn";  // not watched: the peer's step (step_turn.h)
  rec.turn_wait_ms = turn_.wait();
}

void TurnHook::after_step(int64_t) {
  turn_.pass();
}

void TurnHook::finish(TrainOutcome&) {
  if (!turn_.ended().empty())  // turns ended before the last step: say why in the run's log
    std::cerr << "rank 0: the timing run's turns with its peer ended early: " << turn_.ended()
              << "\n";
  progress_.phase = "turn";
  turn_.finish();
  progress_.phase = "done";
}

void FaultHook::begin_step(int64_t step, StepRecord& rec) {
  rec.lr = faults_.lr(step, rec.lr);
  faults_.at_step_start(step);
}
void FaultHook::on_weights(int64_t step, variants::Sharding& params) {
  faults_.on_params(step, params);
}
void FaultHook::on_batch(int64_t step, int64_t* tokens, int64_t n) {
  faults_.on_batch(step, tokens, n);
}
void FaultHook::on_loss(int64_t step, torch::Tensor& reported, torch::Tensor& train) {
  faults_.on_loss(step, reported, train);
}
void FaultHook::on_grads(int64_t step, variants::Sharding& grads) {
  faults_.on_grads(step, grads);
}
void FaultHook::before_read(int64_t step) {  // injected delays: part of the step
  faults_.delay(step, progress_.step_started_ns);
}

ProfileHook::ProfileHook(RankModel& m) : prof_(m.prof), warmup_steps_(m.run.warmup_steps) {
  if (prof_.trace) trace_ = std::make_shared<TraceLog>(m.who.rank);
  window_ = std::make_unique<ProfileWindow>(prof_, m.run.warmup_steps, m.run.steps, m.model,
                                            trace_.get(), epoch_, m.device);
  if (prof_.nvtx) {
    nvtx_layers_ = std::make_unique<NvtxLayers>(static_cast<int>(m.model_cfg.n_layers));
    m.model->add_hooks(nvtx_layers_.get());
  }
}

void ProfileHook::begin_step(int64_t step, StepRecord& rec) {
  if (prof_.nvtx)
    step_range_ =
        std::make_unique<compat::NvtxRange>(true, ("step " + std::to_string(step)).c_str());
  if (prof_.covers(step, warmup_steps_)) rec.timed = false;
  window_->before_step(step);
  if (window_->profiling()) rec.timed = false;
}

bool ProfileHook::needs_eager(int64_t) const {
  return window_->hooks_on();
}

void ProfileHook::on_phase(const char* phase) {
  if (!prof_.nvtx) return;
  phase_range_.reset();
  phase_range_ = std::make_unique<compat::NvtxRange>(true, phase);
}

void ProfileHook::end_ranges() {
  phase_range_.reset();
  step_range_.reset();
}

void ProfileHook::end_step(int64_t step, const PhaseTimer& timer, StepRecord&) {
  if (trace_) {
    auto us = [&](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::micro>(t - epoch_).count();
    };
    auto spans = timer.host_spans();
    if (!spans.empty())
      trace_->add(TraceEvent{"step " + std::to_string(step), "step", 'X', us(spans.front().start),
                             us(spans.back().end) - us(spans.front().start), 0});
    for (const auto& sp : spans)
      trace_->add(TraceEvent{sp.phase, "phase", 'X', us(sp.start), us(sp.end) - us(sp.start), 0});
  }
  window_->after_step();
  end_ranges();
}

void ProfileHook::finish(TrainOutcome& out) {
  end_ranges();
  window_->finish();
  out.env["profile_clock"] = window_->clock();
  out.top_ops = window_->top_ops(25);
  out.top_kernels = window_->top_kernels(25);
  out.layer_costs = window_->layer_costs();
  out.profiled_steps = window_->profiled_steps();
  out.trace = trace_;
}

void GraphHook::begin_step(int64_t step, StepRecord&) {
  graphed_ = step >= 2 && !all_.needs_eager(step);
}

Losses GraphHook::forward(int64_t step, const Batch& b, RankModel& m, StepRecord& rec) {
  if (!graph_.captured()) {
    try {
      graph_.capture(b.x, b.y, [&m](const torch::Tensor& x, const torch::Tensor& y) {
        const Losses l = m.model_loss(x, y);
        return std::make_pair(l.reported, l.train);
      });
    } catch (const std::exception& e) {
      throw std::runtime_error("run.cuda_graphs: capturing step " + std::to_string(step) +
                               " failed: " + e.what());
    }
    rec.timed = false;  // the capture step is never timed
  }
  Losses l;
  l.reported = l.train = graph_.forward(b.x, b.y);
  return l;
}

}  // namespace lockstep::train
