#include "harness/train/phase_timer.h"

namespace lockstep::train {

PhaseTimer::PhaseTimer(const torch::Device& device) : device_(device) {
#if LOCKSTEP_TORCH2
  device_events_ = device.is_cuda();
#endif
}

// A phase boundary: a host timestamp, and a device event on the current stream (CUDA, 2.x).
void PhaseTimer::boundary() {
  host_marks_.push_back(std::chrono::steady_clock::now());
#if LOCKSTEP_TORCH2
  if (device_events_) {
    events_.emplace_back(device_.type(), c10::EventFlag::BACKEND_DEFAULT);
    events_.back().record(c10::impl::VirtualGuardImpl(device_.type()).getStream(device_));
  }
#endif
}

void PhaseTimer::start() {
  phases_.clear();
  host_marks_.clear();
  events_.clear();
  moves_.clear();
  boundary();
}

void PhaseTimer::mark(const std::string& phase) {
  phases_.push_back(phase);
  boundary();
}

void PhaseTimer::move(const std::string& from, const std::string& to, double ms) {
  if (ms > 0) moves_.emplace_back(from, to, ms);
}

std::map<std::string, double> PhaseTimer::finish(double* step_ms) {
  std::map<std::string, double> out;
  double total = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    double ms = 0;
#if LOCKSTEP_TORCH2
    if (device_events_) {
      events_[i + 1].synchronize();
      ms = events_[i].elapsedTime(events_[i + 1]);
    } else
#endif
      ms = std::chrono::duration<double, std::milli>(host_marks_[i + 1] - host_marks_[i]).count();
    out[phases_[i]] += ms;
    total += ms;
  }
  for (const auto& [from, to, ms] : moves_) {
    double m = std::min(ms, out[from]);
    out[from] -= m;
    out[to] += m;
  }
  *step_ms = total;
  return out;
}

}  // namespace lockstep::train

namespace lockstep::train {

std::vector<PhaseTimer::Span> PhaseTimer::host_spans() const {
  std::vector<Span> out;
  for (size_t i = 0; i < phases_.size() && i + 1 < host_marks_.size(); ++i)
    out.push_back(Span{phases_[i], host_marks_[i], host_marks_[i + 1]});
  return out;
}

}  // namespace lockstep::train
