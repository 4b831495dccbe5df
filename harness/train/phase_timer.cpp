#include "harness/train/phase_timer.h"

namespace lockstep::train {

PhaseTimer::PhaseTimer(const torch::Device& device) : device_(device) {
#if defined(LOCKSTEP_WITH_CUDA)
  device_events_ = device.is_cuda();
#endif
}

// A phase boundary: a host timestamp, and a CUDA event on the current stream.
void PhaseTimer::boundary() {
  host_marks_.push_back(std::chrono::steady_clock::now());
  if (device_events_) {
    events_.emplace_back();
    events_.back().record();
  }
}

void PhaseTimer::start() {
  phases_.clear();
  host_marks_.clear();
  events_.clear();
  moves_.clear();
  boundary();
}

void PhaseTimer::mark(Phase phase) {
  phases_.push_back(phase);
  boundary();
}

void PhaseTimer::move(Phase from, Phase to, dist::WaitTime wait) {
  if (!wait.empty()) moves_.emplace_back(from, to, std::move(wait));
}

void PhaseTimer::move(Phase from, Phase to, double ms) {
  dist::WaitTime w;
  w.add_host_ms(ms);
  move(from, to, std::move(w));
}

std::map<std::string, double> PhaseTimer::finish(double* step_ms) {
  std::map<std::string, double> out;
  double total = 0;
  // The last boundary is the latest work on the stream: once it completes, every event has.
  if (device_events_ && !events_.empty()) events_.back().synchronize();
  for (size_t i = 0; i < phases_.size(); ++i) {
    const double ms =
        device_events_
            ? events_[i].ms_until(events_[i + 1])
            : std::chrono::duration<double, std::milli>(host_marks_[i + 1] - host_marks_[i])
                  .count();
    out[phase_name(phases_[i])] += ms;
    total += ms;
  }
  for (const auto& [from, to, wait] : moves_) {
    double& f = out[phase_name(from)];
    const double m = std::min(wait.ms(), f);
    f -= m;
    out[phase_name(to)] += m;
  }
  *step_ms = total;
  return out;
}

std::vector<PhaseTimer::Span> PhaseTimer::host_spans() const {
  std::vector<Span> out;
  for (size_t i = 0; i < phases_.size() && i + 1 < host_marks_.size(); ++i)
    out.push_back(Span{phases_[i], host_marks_[i], host_marks_[i + 1]});
  return out;
}

}  // namespace lockstep::train
