// Times the phases of a step. CPU: a steady clock at each phase boundary. CUDA: a CUDA event
// recorded on the current stream at each boundary, read once the step's loss has been copied to
// the host (timing adds no host sync of its own).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "harness/compat/torch_compat.h"
#include "harness/dist/comm.h"
#include "harness/vocab/phase.h"

namespace lockstep::train {

class PhaseTimer {
 public:
  explicit PhaseTimer(const torch::Device& device);
  // Whether phases are device time (CUDA events) rather than host time.
  bool device_time() const { return device_events_; }
  void start();
  // Closes the current phase: the time since the previous boundary is booked to `phase`.
  void mark(Phase phase);
  // Time measured elsewhere (collectives waited for inside the forward, say) moved from one
  // phase to another; read at finish().
  void move(Phase from, Phase to, dist::WaitTime wait);
  void move(Phase from, Phase to, double ms);
  // Ends the step. Returns phase name -> ms (disjoint, summing to the step; the record's keys,
  // phase_names()) and sets step_ms.
  std::map<std::string, double> finish(double* step_ms);
  // Host-clock spans of the finished step's phases: (phase, start, end).
  struct Span {
    Phase phase;
    std::chrono::steady_clock::time_point start, end;
  };
  std::vector<Span> host_spans() const;

 private:
  void boundary();
  bool device_events_ = false;
  torch::Device device_;
  std::vector<Phase> phases_;
  std::vector<std::chrono::steady_clock::time_point> host_marks_;
  std::vector<compat::DeviceEvent> events_;
  std::vector<std::tuple<Phase, Phase, dist::WaitTime>> moves_;
};

}  // namespace lockstep::train
