// Chrome trace-event output (chrome://tracing, Perfetto): one file per rank, pid = rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lockstep::train {

struct TraceEvent {
  std::string name;
  std::string cat;   // "phase" | "op" | "layer"
  char ph = 'X';     // complete events
  double ts_us = 0;  // microseconds since the trace's epoch
  double dur_us = 0;
  int tid = 0;
};

class TraceLog {
 public:
  explicit TraceLog(int rank, size_t max_events = 500000) : rank_(rank), max_events_(max_events) {}
  void add(TraceEvent e) {
    if (events_.size() < max_events_) events_.push_back(std::move(e));
  }
  size_t size() const { return events_.size(); }
  // {"traceEvents": [...], "displayTimeUnit": "ms"} with process/thread name metadata.
  void write(const std::filesystem::path& path) const;

 private:
  int rank_;
  size_t max_events_;
  std::vector<TraceEvent> events_;
};

}  // namespace lockstep::train
