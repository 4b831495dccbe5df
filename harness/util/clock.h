#pragma once
// The steady clock in nanoseconds: the one time base of a step's start (Progress::step_started_ns),
// the watchdog's stall check and the injected slowdowns.
#include <chrono>
#include <cstdint>

namespace lockstep::util {

inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace lockstep::util
