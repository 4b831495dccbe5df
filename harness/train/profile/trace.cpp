#include "harness/train/profile/trace.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "harness/util/files.h"

namespace lockstep::train {

uint32_t TraceLog::intern(const std::string& s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  it = ids_.emplace(s, static_cast<uint32_t>(strings_.size())).first;
  strings_.push_back(&it->first);  // std::map nodes never move
  return it->second;
}

void TraceLog::add(const TraceEvent& e) {
  if (events_.size() >= max_events_) return;
  events_.push_back(Record{intern(e.name), intern(e.cat), e.ph, e.tid, e.ts_us, e.dur_us});
}

void TraceLog::drop_since(size_t mark, const std::string& cat) {
  auto it = ids_.find(cat);
  if (it == ids_.end() || mark >= events_.size()) return;
  const uint32_t id = it->second;
  events_.erase(std::remove_if(events_.begin() + static_cast<std::ptrdiff_t>(mark), events_.end(),
                               [id](const Record& r) { return r.cat == id; }),
                events_.end());
}

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
    nlohmann::json j{{"name", *strings_[e.name]},
                     {"cat", *strings_[e.cat]},
                     {"ph", std::string(1, e.ph)},
                     {"ts", e.ts_us},
                     {"pid", rank_},
                     {"tid", e.tid}};
    if (e.ph == 'X') j["dur"] = e.dur_us;
    events.push_back(std::move(j));
  }
  util::write_atomic(
      path, nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n");
}

}  // namespace lockstep::train
