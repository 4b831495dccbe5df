#include "harness/train/trace.h"

#include <nlohmann/json.hpp>

#include "harness/util/files.h"

namespace lockstep::train {

void TraceLog::write(const std::filesystem::path& path) const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", rank_},
                    {"tid", 0},
                    {"ts", 0},
                    {"args", {{"name", "rank " + std::to_string(rank_)}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", rank_},
                    {"tid", 0},
                    {"ts", 0},
                    {"args", {{"name", "trainer"}}}});
  for (const auto& e : events_) {
    nlohmann::json j{{"name", e.name}, {"cat", e.cat}, {"ph", std::string(1, e.ph)},
                     {"ts", e.ts_us},  {"pid", rank_}, {"tid", e.tid}};
    if (e.ph == 'X') j["dur"] = e.dur_us;
    events.push_back(std::move(j));
  }
  util::write_atomic(
      path, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n");
}

}  // namespace lockstep::train
