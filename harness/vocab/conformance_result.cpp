#include "harness/vocab/conformance_result.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace lockstep {
using nlohmann::json;

std::string ConformanceRow::verdict_line() const {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "%s \"%s\": case %s (%s, %s) %s: max error %.2g %s %g x %.2g (the built-in %s's) + %.2g",
                slot.c_str(), kernel.c_str(), case_name.c_str(), shape.c_str(), dtype.c_str(),
                direction.c_str(), error, passed ? "<=" : ">", factor, builtin_error,
                builtin.c_str(), floor);
  return buf;
}

bool ConformanceReport::passed() const {
  for (const auto& r : rows)
    if (!r.passed) return false;
  return true;
}

const ConformanceRow* ConformanceReport::worst() const {
  const ConformanceRow* w = nullptr;
  for (const auto& r : rows) {
    const bool better = !w || (!r.passed && w->passed) ||
                        (r.passed == w->passed && (!std::isfinite(r.error) || r.ratio() > w->ratio()));
    if (better) w = &r;
  }
  return w;
}

namespace {
json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }
double num_of(const json& j) { return j.is_null() ? NAN : j.get<double>(); }
}  // namespace

void write_conformance(const std::filesystem::path& file, const ConformanceReport& r) {
  json rows = json::array();
  for (const auto& x : r.rows)
    rows.push_back({{"slot", x.slot},          {"kernel", x.kernel},
                    {"origin", x.origin},      {"knob", x.knob},
                    {"case", x.case_name},     {"shape", x.shape},
                    {"direction", x.direction}, {"dtype", x.dtype},
                    {"error", num(x.error)},   {"builtin_error", num(x.builtin_error)},
                    {"builtin", x.builtin},    {"factor", x.factor},
                    {"floor", num(x.floor)},   {"bound", num(x.bound)},
                    {"ratio", num(x.ratio())}, {"passed", x.passed}});
  const json j = {{"passed", r.passed()}, {"device", r.device}, {"seconds", r.seconds},
                  {"kernels", r.kernels},  {"rows", rows}};
  std::ofstream out(file, std::ios::trunc);
  out << j.dump(1) << "\n";
  if (!out) throw std::runtime_error(file.string() + ": cannot write");
}

ConformanceReport read_conformance(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": missing (the conformance check wrote nothing)");
  ConformanceReport r;
  try {
    const json j = json::parse(in);
    r.device = j.at("device").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    r.kernels = j.at("kernels").get<std::vector<std::string>>();
    for (const auto& x : j.at("rows")) {
      ConformanceRow row;
      row.slot = x.at("slot").get<std::string>();
      row.kernel = x.at("kernel").get<std::string>();
      row.origin = x.at("origin").get<std::string>();
      row.knob = x.at("knob").get<std::string>();
      row.case_name = x.at("case").get<std::string>();
      row.shape = x.at("shape").get<std::string>();
      row.direction = x.at("direction").get<std::string>();
      row.dtype = x.at("dtype").get<std::string>();
      row.error = num_of(x.at("error"));
      row.builtin_error = num_of(x.at("builtin_error"));
      row.builtin = x.at("builtin").get<std::string>();
      row.factor = x.at("factor").get<double>();
      row.floor = num_of(x.at("floor"));
      row.bound = num_of(x.at("bound"));
      row.passed = x.at("passed").get<bool>();
      r.rows.push_back(std::move(row));
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
  return r;
}

}  // namespace lockstep
