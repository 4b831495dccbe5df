#include "harness/train/hooks.h"

#include <iostream>
#include <string>

#include "harness/train/phase_timer.h"

namespace lockstep::train {

void TurnHook::before_step(int64_t, StepRecord& rec) {
  progress_.phase = Phase::Turn;  // not watched: the peer's step (step_turn.h)
  rec.turn_wait_ms = turn_.wait();
}

void TurnHook::on_phase(Phase phase, Edge edge, StepView&) {
  if (phase == Phase::Checkpoint && edge == Edge::End) turn_.pass();
}

void TurnHook::finish(TrainOutcome&) {
  if (!turn_.ended().empty())  // turns ended before the last step: say why in the run's log
    std::cerr << "rank 0: the timing run's turns with its peer ended early: " << turn_.ended()
              << "\n";
  progress_.phase = Phase::Turn;
  turn_.finish();
  progress_.phase = Phase::Done;
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

void ProfileHook::before_step(int64_t step, StepRecord&) {
  if (prof_.nvtx)
    step_range_ =
        std::make_unique<compat::NvtxRange>(true, ("step " + std::to_string(step)).c_str());
  window_->before_step(step);
}

StepNeeds ProfileHook::needs(int64_t step) const {
  return StepNeeds{window_->hooks_on(), prof_.covers(step, warmup_steps_) || window_->profiling()};
}

void ProfileHook::on_phase(Phase phase, Edge edge, StepView&) {
  const bool begin = edge == Edge::Begin;
  if (phase == Phase::Forward) begin ? window_->forward_begin() : window_->forward_end();
  if (phase == Phase::Backward) begin ? window_->backward_begin() : window_->backward_end();
  if (!prof_.nvtx || !in_step(phase)) return;
  phase_range_.reset();
  if (begin) phase_range_ = std::make_unique<compat::NvtxRange>(true, phase_name(phase));
}

void ProfileHook::end_ranges() {
  phase_range_.reset();
  step_range_.reset();
}

void ProfileHook::after_step(int64_t step, const PhaseTimer& timer, const StepRecord&) {
  if (trace_) {
    auto us = [&](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double, std::micro>(t - epoch_).count();
    };
    auto spans = timer.host_spans();
    if (!spans.empty())
      trace_->add(TraceEvent{"step " + std::to_string(step), "step", 'X', us(spans.front().start),
                             us(spans.back().end) - us(spans.front().start), 0});
    for (const auto& sp : spans)
      trace_->add(TraceEvent{phase_name(sp.phase), "phase", 'X', us(sp.start),
                             us(sp.end) - us(sp.start), 0});
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

}  // namespace lockstep::train
