// What the watchdog (harness/train/watchdog.h) reads of a running step, from its own thread: the
// step, its phase, when it began, and the collective being waited in. The trainer and its hooks
// write it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "harness/vocab/phase.h"

namespace lockstep::train {

struct Progress {
  std::atomic<int64_t> step{0};
  std::atomic<Phase> phase{Phase::Setup};
  std::atomic<int64_t> step_started_ns{0};
  std::function<std::string()> in_flight;  // the collective being waited in
};

}  // namespace lockstep::train
