// Times the phases of a step. CPU: a steady clock at each phase boundary. CUDA with LibTorch 2.x:
// device events recorded on the current stream at each boundary, read once the step's loss has
// been copied to the host (that copy is the step's only host sync; timing adds none).
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include "harness/compat/torch_compat.h"

namespace lockstep::train {

class PhaseTimer {
 public:
  explicit PhaseTimer(const torch::Device& device);
  void start();
  // Closes the current phase: the time since the previous boundary is booked to `phase`.
  void mark(const std::string& phase);
  // Time measured elsewhere (e.g. collectives inside the forward) moved from one phase to another.
  void move(const std::string& from, const std::string& to, double ms);
  // Ends the step. Returns phase -> ms (disjoint, summing to the step) and sets step_ms.
  std::map<std::string, double> finish(double* step_ms);
  // Host-clock spans of the finished step's phases: (phase, start, end).
  struct Span {
    std::string phase;
    std::chrono::steady_clock::time_point start, end;
  };
  std::vector<Span> host_spans() const;

 private:
  void boundary();
  bool device_events_ = false;
  torch::Device device_;
  std::vector<std::string> phases_;
  std::vector<std::chrono::steady_clock::time_point> host_marks_;
  std::vector<c10::Event> events_;
  std::vector<std::tuple<std::string, std::string, double>> moves_;
};

}  // namespace lockstep::train
