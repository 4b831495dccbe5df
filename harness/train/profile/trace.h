// Chrome trace-event output (chrome://tracing, Perfetto): one file per rank, pid = rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
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
  explicit TraceLog(int rank, size_t max_events = 500000) : rank_(rank), max_events_(max_events) {
    events_.reserve(max_events_);  // before training allocates: untouched pages cost nothing
  }
  void add(const TraceEvent& e);
  size_t size() const { return events_.size(); }
  // Drops the events of category `cat` added since size() was `mark` (a profiler warm-up).
  void drop_since(size_t mark, const std::string& cat);
  // {"traceEvents": [...], "displayTimeUnit": "ms"} with process/thread name metadata.
  void write(const std::filesystem::path& path) const;

 private:
  // Events are kept compact, names interned: the log lives beside the model's activations in the
  // same heap, and one small string per event (tens of thousands per profiled step) would carve
  // up the free chunks the next step's activations reuse, so every profiled step faulted in fresh
  // memory (measured at d_model 256: +170 huge-page faults in a 5-step window, which showed up as
  // GELU and softmax backward kernels running 10x slower in the operator table). The event
  // buffer is reserved whole up front, never regrown.
  struct Record {
    uint32_t name, cat;
    char ph;
    int tid;
    double ts_us, dur_us;
  };
  uint32_t intern(const std::string& s);

  int rank_;
  size_t max_events_;
  std::vector<Record> events_;
  std::map<std::string, uint32_t, std::less<>> ids_;  // name -> id
  std::vector<const std::string*> strings_;           // id -> name (the map's keys)
};

}  // namespace lockstep::train
