#include "harness/vocab/serve_config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace lockstep::serve {

using config::KeySpec;
using config::Knob;

namespace {

// The fields a [[serve.lanes]] table may hold, with their documentation (README "Serving").
const std::map<std::string, std::string>& lane_fields() {
  static const std::map<std::string, std::string> f{
      {"name", "the lane's name in reports (default lane1, lane2, ...)"},
      {"min_len", "shortest request, tokens (default: the previous lane's max_len + 1, or 1)"},
      {"max_len", "longest request, tokens (required; <= model.seq_len)"},
      {"priority", "0 (highest) .. 19: the nice value of the lane's workers (default 0)"},
      {"max_batch_size", "a batch leaves when it holds this many requests (default 8)"},
      {"max_wait_ms", "...or when its oldest request has waited this long (default 5)"},
      {"workers", "threads running the lane's batches (default 1)"},
  };
  return f;
}

// A field's TOML text (config.h keeps array-of-tables scalars as text) as a number or a string.
bool as_int(const std::string& text, int64_t& out) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return false;
  out = v;
  return true;
}
bool as_number(const std::string& text, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || text[0] == '"') return false;
  out = v;
  return true;
}
bool as_string(const std::string& text, std::string& out) {
  if (text.size() < 2 || text.front() != '"' || text.back() != '"') return false;
  out.clear();
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '\\' && i + 2 < text.size()) ++i;
    out += text[i];
  }
  return true;
}

std::vector<LaneConfig> read_lanes(const config::Config& c) {
  const auto& tables = c.tables("serve.lanes");
  std::vector<LaneConfig> lanes;
  int64_t previous_max = 0;
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string at = "serve.lanes[" + std::to_string(i + 1) + "]";
    LaneConfig l;
    l.name = "lane" + std::to_string(i + 1);
    for (const auto& [field, text] : tables[i]) {
      const std::string key = at + "." + field;
      if (!lane_fields().count(field)) {
        std::vector<std::string> names;
        for (const auto& [n, doc] : lane_fields()) names.push_back(n);
        std::string m = config::did_you_mean(field, names);
        for (const auto& n : names)
          if (m.empty() && n.rfind(field, 0) == 0) m = n;  // a prefix: max_batch -> max_batch_size
        c.fail(key, "unknown lane field" + (m.empty() ? "" : " (did you mean \"" + m + "\"?)"));
      }
      auto integer = [&](int64_t lo, int64_t hi) {
        int64_t v = 0;
        if (!as_int(text, v)) c.fail(key, "expected an integer, got " + text);
        if (v < lo || v > hi)
          c.fail(key, "out of range: " + text + " (must be " + std::to_string(lo) + " .. " +
                          std::to_string(hi) + ")");
        return v;
      };
      if (field == "name") {
        if (!as_string(text, l.name) || l.name.empty()) c.fail(key, "expected a non-empty string");
      } else if (field == "min_len") {
        l.min_len = integer(1, 1 << 20);
      } else if (field == "max_len") {
        l.max_len = integer(1, 1 << 20);
      } else if (field == "priority") {
        l.priority = integer(0, 19);
      } else if (field == "max_batch_size") {
        l.max_batch_size = integer(1, 4096);
      } else if (field == "workers") {
        l.workers = integer(1, 256);
      } else if (field == "max_wait_ms") {
        if (!as_number(text, l.max_wait_ms)) c.fail(key, "expected a number, got " + text);
        if (!(l.max_wait_ms >= 0 && l.max_wait_ms <= 60000))
          c.fail(key, "out of range: " + text + " (must be 0 .. 60000)");
      }
    }
    if (!tables[i].count("max_len")) c.fail(at, "a lane needs max_len (its longest request)");
    if (!tables[i].count("min_len")) l.min_len = previous_max + 1;
    if (l.min_len > l.max_len)
      c.fail(at + (tables[i].count("min_len") ? ".min_len" : ".max_len"),
             "min_len " + std::to_string(l.min_len) + " > max_len " + std::to_string(l.max_len));
    if (l.max_len > c.integer("model.seq_len"))
      c.fail(at + ".max_len", "max_len " + std::to_string(l.max_len) +
                                  " is longer than the model's sequence (model.seq_len = " +
                                  std::to_string(c.integer("model.seq_len")) + ")");
    previous_max = l.max_len;
    lanes.push_back(l);
  }
  // Lanes tile 1..N: sorted by min_len, each starting where the previous one ended.
  std::vector<size_t> order(lanes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lanes[a].min_len < lanes[b].min_len; });
  int64_t next = 1;
  std::vector<LaneConfig> sorted;
  for (size_t k = 0; k < order.size(); ++k) {
    const LaneConfig& l = lanes[order[k]];
    const std::string at = "serve.lanes[" + std::to_string(order[k] + 1) + "]";
    const std::string prev = k ? "lane \"" + sorted.back().name + "\" (" +
                                     std::to_string(sorted.back().min_len) + ".." +
                                     std::to_string(sorted.back().max_len) + ")"
                               : "";
    if (l.min_len < next)
      c.fail(at + ".min_len", "lane \"" + l.name + "\" (" + std::to_string(l.min_len) + ".." +
                                  std::to_string(l.max_len) + ") overlaps " + prev);
    if (l.min_len > next)
      c.fail(at + ".min_len",
             "lane \"" + l.name + "\" starts at " + std::to_string(l.min_len) + ": lengths " +
                 std::to_string(next) + ".." + std::to_string(l.min_len - 1) +
                 " have no lane (" + (k ? "gap after " + prev : "the first lane starts at 1") + ")");
    for (const auto& s : sorted)
      if (s.name == l.name) c.fail(at + ".name", "two lanes named \"" + l.name + "\"");
    next = l.max_len + 1;
    sorted.push_back(l);
  }
  return sorted;
}

std::string trace_path(const config::Config& c) {
  const std::filesystem::path p(c.str("serve.trace"));
  if (p.empty() || p.is_absolute()) return p.string();
  return (std::filesystem::path(c.where("serve.trace").file).parent_path() / p).string();
}

void finalize(config::Config& c) {
  const auto lanes = read_lanes(c);  // validates
  if (!c.str("serve.trace").empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(trace_path(c), ec))
      c.fail("serve.trace", "cannot read \"" + trace_path(c) + "\": no such file");
    read_trace(trace_path(c), "serve.trace");  // validates every line
  }
  if (!(c.number("serve.rate_rps") > 0))
    c.fail("serve.rate_rps", "must be > 0 (requests per second), got " +
                                 config::format_value(c.value("serve.rate_rps")));
  if (c.integer("serve.short_min_len") > c.integer("serve.short_max_len"))
    c.fail("serve.short_min_len", "short_min_len > short_max_len");
  if (c.integer("serve.long_min_len") > c.integer("serve.long_max_len"))
    c.fail("serve.long_min_len", "long_min_len > long_max_len");
  if (c.number("serve.peak_multiplier") != 1 && c.number("serve.peak_duration_s") <= 0 &&
      c.is_set("serve.peak_multiplier"))
    c.fail("serve.peak_duration_s", "a peak_multiplier needs a peak window (peak_duration_s > 0)");
}

}  // namespace

int ServeConfig::lane_of(int64_t len) const {
  for (size_t i = 0; i < lanes.size(); ++i)
    if (len >= lanes[i].min_len && len <= lanes[i].max_len) return static_cast<int>(i);
  return -1;
}

std::vector<TraceEntry> read_trace(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  if (!in) throw config::ConfigError(config::SourceLoc{path, 0, 0}, key, "cannot read the trace");
  std::vector<TraceEntry> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    double ms = 0;
    long long len = 0;
    std::string extra;
    if (!(fields >> ms >> len) || (fields >> extra) || !(ms >= 0) || len < 1)
      throw config::ConfigError(config::SourceLoc{path, n, 1}, key,
                                "expected \"arrival_ms length\" (ms >= 0, length >= 1), got \"" +
                                    line + "\"");
    if (!out.empty() && ms / 1000.0 < out.back().arrival_s)
      throw config::ConfigError(
          config::SourceLoc{path, n, 1}, key,
          "arrival times out of order: " + config::format_value(ms) + " ms after " +
              config::format_value(out.back().arrival_s * 1000.0) + " ms on an earlier line");
    out.push_back(TraceEntry{ms / 1000.0, static_cast<int64_t>(len)});
  }
  if (out.empty())
    throw config::ConfigError(config::SourceLoc{path, 0, 0}, key, "the trace has no requests");
  return out;
}

bool serving_enabled(const config::Config& cfg) { return !cfg.tables("serve.lanes").empty(); }

const config::SectionSchema& serve_schema() {
  static const config::SectionSchema s{
      "serve",
      "The serving workload (README \"Serving\"): the reference transformer in inference mode "
      "behind a dynamic batcher with lanes, under open-loop load. A config serves when it has at "
      "least one [[serve.lanes]] table (fields: name, min_len, max_len, priority, "
      "max_batch_size, max_wait_ms, workers).",
      {
          KeySpec::Tables("lanes",
                          "[[serve.lanes]]: length ranges, each with its own batcher and workers")
              .kind(Knob::Exact),
          KeySpec::Float("rate_rps", 50.0, "Poisson arrival rate, requests per second (> 0)")
              .range(0, 1e7),
          KeySpec::Float("duration_s", 10.0, "length of the load (one window of a comparison)")
              .range(0.01, 86400),
          KeySpec::Float("peak_multiplier", 1.0, "the arrival rate x this in the peak window")
              .range(1, 1000),
          KeySpec::Float("peak_start_s", 0.0, "start of the peak window").range(0, 86400),
          KeySpec::Float("peak_duration_s", 0.0, "length of the peak window (0 = no peak)")
              .range(0, 86400),
          KeySpec::Str("trace", "",
                       "replay this trace (\"arrival_ms length\" per line, times ascending; "
                       "relative to the config file) instead of Poisson arrivals"),
          KeySpec::Int("short_min_len", 8, "short requests: fewest tokens").range(1, 1 << 20),
          KeySpec::Int("short_max_len", 32, "short requests: most tokens").range(1, 1 << 20),
          KeySpec::Int("long_min_len", 64, "long requests: fewest tokens").range(1, 1 << 20),
          KeySpec::Int("long_max_len", 128, "long requests: most tokens").range(1, 1 << 20),
          KeySpec::Float("long_share", 0.1, "share of long requests").range(0, 1),
          KeySpec::Float("slo_ms", 200.0, "latency objective: SLO attainment, goodput, capacity")
              .range(0.001, 1e7),
          KeySpec::Int("bucket_tokens", 16, "a batch holds requests of one length bucket this wide")
              .range(1, 1 << 20)
              .kind(Knob::Exact),
          KeySpec::Float("drain_s", 5.0,
                         "after the last arrival, how long queued requests may still finish "
                         "(the rest are counted unserved)")
              .range(0, 3600),
          KeySpec::Int("score_requests", 64,
                       "the fixed request set: its scores (same math) and its batches (speed)")
              .range(1, 100000)
              .kind(Knob::None),
          KeySpec::Int("speed_pairs", 10,
                       "compare: turn pairs (AB, BA, ...) of each arm running the fixed set's "
                       "batches, for the throughput check")
              .range(2, 100000)
              .kind(Knob::None),
          KeySpec::Str("throughput_check", "service_speed",
                       "compare: judge throughput as the service speed on the fixed request set "
                       "in turns (service_speed), or as the capacity at slo_ms (capacity: paired "
                       "serve-capacity searches, minutes per arm)")
              .one_of({"service_speed", "capacity"})
              .kind(Knob::None),
          KeySpec::Int("capacity_searches", 3,
                       "compare with throughput_check = \"capacity\": search pairs (one search "
                       "per arm and arrival seed, in turns)")
              .range(2, 1000)
              .kind(Knob::None),
      },
      finalize,
  };
  return s;
}

ServeConfig ServeConfig::from(const config::Config& c) {
  ServeConfig s;
  s.lanes = read_lanes(c);
  s.rate_rps = c.number("serve.rate_rps");
  s.duration_s = c.number("serve.duration_s");
  s.peak_multiplier = c.number("serve.peak_multiplier");
  s.peak_start_s = c.number("serve.peak_start_s");
  s.peak_duration_s = c.number("serve.peak_duration_s");
  s.trace = trace_path(c);  // relative to the file that named it
  s.short_min_len = c.integer("serve.short_min_len");
  s.short_max_len = c.integer("serve.short_max_len");
  s.long_min_len = c.integer("serve.long_min_len");
  s.long_max_len = c.integer("serve.long_max_len");
  s.long_share = c.number("serve.long_share");
  s.slo_ms = c.number("serve.slo_ms");
  s.bucket_tokens = c.integer("serve.bucket_tokens");
  s.drain_s = c.number("serve.drain_s");
  s.score_requests = c.integer("serve.score_requests");
  s.speed_pairs = c.integer("serve.speed_pairs");
  s.throughput_check = c.str("serve.throughput_check");
  s.capacity_searches = c.integer("serve.capacity_searches");
  s.seed = static_cast<uint64_t>(c.integer("run.seed"));
  return s;
}

}  // namespace lockstep::serve
