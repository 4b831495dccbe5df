#include "harness/external/metrics_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "variants/precision_traits.h"

namespace lockstep::external {
namespace {
using nlohmann::json;

[[noreturn]] void bad(int64_t line_no, const std::string& what) {
  throw std::runtime_error("line " + std::to_string(line_no) + ": " + what);
}

double number_field(const json& j, const char* key, int64_t line_no, bool nullable) {
  const json& v = j.at(key);
  if (v.is_null() && nullable) return std::numeric_limits<double>::quiet_NaN();
  if (!v.is_number())
    bad(line_no, std::string("\"") + key + "\" must be a number" + (nullable ? " or null" : "") +
                     ", got " + v.dump());
  return v.get<double>();
}

int64_t count_field(const json& j, const char* key, int64_t line_no) {
  const json& v = j.at(key);
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    bad(line_no, std::string("\"") + key + "\" must be a non-negative integer, got " + v.dump());
  return v.get<int64_t>();
}

// A compute dtype's name (the hello's "compute", a step's "observed_compute"): one of the
// precisions, checked here so that what is kept is valid.
std::string compute_field(const json& j, const char* key, const std::string& where, int64_t line_no) {
  const json& v = j.at(key);
  const auto names = variants::names_of(variants::all_computes());
  if (v.is_string() && variants::parse_compute(v.get<std::string>())) return v.get<std::string>();
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  bad(line_no, where + " must be one of " + list + ", got " + v.dump());
}

}  // namespace

ExternalStep parse_step_line(const std::string& line, int64_t line_no, int64_t previous_step) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    const bool nan = line.find("NaN") != std::string::npos || line.find("Infinity") != std::string::npos;
    bad(line_no, std::string("not JSON") +
                     (nan ? " (NaN and Infinity are not JSON: write null for a non-finite value)"
                          : "") +
                     ": " + e.what());
  }
  if (!j.is_object()) bad(line_no, "expected a JSON object, got " + std::string(j.type_name()));
  for (const char* k : {"step", "loss", "step_ms", "tokens"})
    if (!j.contains(k))
      bad(line_no, std::string("missing required field \"") + k +
                       "\" (every line needs step, loss, step_ms, tokens)");
  ExternalStep s;
  StepRecord& r = s.record;
  r.step = count_field(j, "step", line_no);
  if (r.step != previous_step + 1)
    bad(line_no, "step " + std::to_string(r.step) +
                     (previous_step == 0 ? " first" : " after step " + std::to_string(previous_step)) +
                     ": steps must come in order, one line each, from 1");
  r.loss = number_field(j, "loss", line_no, /*nullable=*/true);
  r.step_ms = number_field(j, "step_ms", line_no, false);
  if (!(r.step_ms >= 0)) bad(line_no, "\"step_ms\" must be >= 0, got " + j.at("step_ms").dump());
  r.tokens = count_field(j, "tokens", line_no);
  r.grad_norm = j.contains("grad_norm") ? number_field(j, "grad_norm", line_no, true)
                                        : std::numeric_limits<double>::quiet_NaN();
  if (j.contains("lr")) r.lr = number_field(j, "lr", line_no, false);
  // Phase times: what the trainer measured; "other" is the rest of the step unless it says.
  bool any_phase = false;
  double phases = 0;
  for (const auto& p : phase_names()) {
    const std::string key = p + "_ms";
    if (!j.contains(key)) continue;
    const double v = number_field(j, key.c_str(), line_no, false);
    if (!(v >= 0)) bad(line_no, "\"" + key + "\" must be >= 0, got " + j.at(key).dump());
    r.phase_ms[p] = v;
    phases += v;
    any_phase = true;
  }
  if (any_phase && !j.contains("other_ms")) r.phase_ms["other"] = std::max(0.0, r.step_ms - phases);
  if (j.contains("peak_memory_bytes"))
    s.peak_memory_bytes = count_field(j, "peak_memory_bytes", line_no);
  if (j.contains("observed_compute"))
    s.observed_compute = compute_field(j, "observed_compute", "\"observed_compute\"", line_no);
  r.local_loss = r.loss;
  return s;
}

std::optional<TrainerProtocol> parse_hello(const std::string& line, int64_t line_no,
                                           bool* only_hello) {
  *only_hello = false;
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error&) {
    return std::nullopt;  // parse_step_line names what is wrong with it
  }
  if (!j.is_object() || !j.contains("lockstep")) return std::nullopt;
  const json& h = j.at("lockstep");
  if (!h.is_object() || !h.contains("protocol") || !h.at("protocol").is_number_integer() ||
      h.at("protocol").get<int64_t>() < 1)
    bad(line_no, "\"lockstep\" must be {\"protocol\": <integer >= 1>, \"supports\": [...]}, got " +
                     h.dump());
  TrainerProtocol p;
  p.version = static_cast<int>(std::min<int64_t>(h.at("protocol").get<int64_t>(), 1000));
  if (h.contains("supports")) {
    const json& s = h.at("supports");
    if (!s.is_array()) bad(line_no, "\"lockstep\".\"supports\" must be an array of names, got " + s.dump());
    for (const auto& name : s) {
      if (!name.is_string())
        bad(line_no, "\"lockstep\".\"supports\" must hold names (strings), got " + name.dump());
      for (auto c : all_capabilities())
        if (name.get<std::string>() == to_string(c) && !p.has(c)) p.supports.push_back(c);
    }
    std::vector<Capability> ordered;  // all_capabilities() order, whatever the trainer's
    for (auto c : all_capabilities())
      if (p.has(c)) ordered.push_back(c);
    p.supports = ordered;
  }
  if (h.contains("compute")) p.compute = compute_field(h, "compute", "\"lockstep\".\"compute\"", line_no);
  if (p.version < 2) p.supports.clear();  // protocol 1 is metrics only
  *only_hello = !j.contains("step");
  return p;
}

bool MetricsTail::exists() const {
  std::error_code ec;
  return std::filesystem::exists(path_, ec);
}

std::vector<MetricsTail::Line> MetricsTail::read_new(bool at_end) {
  std::vector<Line> out;
  std::ifstream in(path_, std::ios::binary);
  if (in) {
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    offset_ += chunk.size();
    partial_ += chunk;
  }
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string text = partial_.substr(start, nl - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    ++line_no_;
    if (text.find_first_not_of(" \t") != std::string::npos) out.push_back({std::move(text), line_no_});
  }
  partial_.erase(0, start);
  if (at_end && partial_.find_first_not_of(" \t\r") != std::string::npos) {
    out.push_back({partial_, ++line_no_});
    partial_.clear();
  }
  return out;
}

}  // namespace lockstep::external
