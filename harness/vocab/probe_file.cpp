#include "harness/vocab/probe_file.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace lockstep::train {
namespace fs = std::filesystem;
using nlohmann::json;

void write_probe(const fs::path& dir, const ProbeRecord& p) {
  fs::create_directories(dir);
  {
    std::ofstream bin(dir / "probe.bin", std::ios::binary | std::ios::trunc);
    for (const auto& step : p.sketches)
      for (const auto& sk : step)
        bin.write(reinterpret_cast<const char*>(sk.data()),
                  static_cast<std::streamsize>(sk.size() * sizeof(double)));
    if (!bin) throw std::runtime_error((dir / "probe.bin").string() + ": cannot write");
  }
  // The index last: a probe.json names a complete probe.bin.
  std::ofstream(dir / "probe.json", std::ios::trunc)
      << json{{"steps", p.steps}, {"tensors", p.tensors}, {"buckets", p.buckets}}.dump(1) << "\n";
}

ProbeRecord read_probe(const fs::path& dir) {
  const fs::path index = dir / "probe.json", data = dir / "probe.bin";
  std::ifstream in(index);
  if (!in) throw std::runtime_error(index.string() + ": missing (the probe run wrote nothing)");
  ProbeRecord p;
  try {
    const json j = json::parse(in);
    p.steps = j.at("steps").get<std::vector<int64_t>>();
    p.tensors = j.at("tensors").get<std::vector<std::string>>();
    p.buckets = j.at("buckets").get<int64_t>();
  } catch (const json::exception& e) {
    throw std::runtime_error(index.string() + ": " + e.what());
  }
  const auto n = static_cast<uintmax_t>(p.steps.size() * p.tensors.size()) *
                 static_cast<uintmax_t>(p.buckets) * sizeof(double);
  std::error_code ec;
  if (p.buckets <= 0 || fs::file_size(data, ec) != n || ec)
    throw std::runtime_error(data.string() + ": " + std::to_string(n) +
                             " bytes expected from probe.json");
  std::ifstream bin(data, std::ios::binary);
  p.sketches.assign(p.steps.size(), std::vector<std::vector<double>>(
                                        p.tensors.size(), std::vector<double>(p.buckets)));
  for (auto& step : p.sketches)
    for (auto& sk : step)
      bin.read(reinterpret_cast<char*>(sk.data()),
               static_cast<std::streamsize>(sk.size() * sizeof(double)));
  if (!bin) throw std::runtime_error(data.string() + ": short read");
  return p;
}

}  // namespace lockstep::train
