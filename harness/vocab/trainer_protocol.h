// What a trainer can do for the gate (the trainer protocol, docs/protocol.md). Lockstep's own
// trainer does everything; an external trainer announces what it supports on a hello line,
//   {"lockstep": {"protocol": 2, "supports": ["turns", "noise", "probe"], "compute": "bf16"}}
// (alone before its first step, or as a field of its first metrics line), and Lockstep uses
// exactly that. A trainer that announces nothing speaks protocol 1 (metrics only). "compute" (the
// dtype it computes in) sets the noise envelope's u (harness/compare/envelope_noise.h); a step line
// may say what the helper saw ("observed_compute": an autocast dtype), shown, never used. Torch-free.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lockstep {

enum class Capability { Turns, Noise, Probe };

inline const char* to_string(Capability c) {
  switch (c) {
    case Capability::Turns: return "turns";
    case Capability::Noise: return "noise";
    case Capability::Probe: return "probe";
  }
  return "?";
}

inline const std::vector<Capability>& all_capabilities() {
  static const std::vector<Capability> all{Capability::Turns, Capability::Noise, Capability::Probe};
  return all;
}

struct TrainerProtocol {
  int version = 1;
  std::vector<Capability> supports;  // in all_capabilities() order
  bool external = true;              // false: Lockstep's own trainer
  // The compute dtype the trainer declared in its hello and the one its helper observed (an
  // autocast dtype during a step): a precision's name, validated where the metrics are read
  // (harness/external/metrics_reader.h; the enum is variants::Compute, above this layer); "" when
  // not said.
  std::string compute, observed_compute;

  bool has(Capability c) const {
    for (auto s : supports)
      if (s == c) return true;
    return false;
  }
  std::vector<Capability> lacks() const {
    std::vector<Capability> out;
    for (auto c : all_capabilities())
      if (!has(c)) out.push_back(c);
    return out;
  }
  std::string supports_text() const {  // "turns,noise" ("" for none)
    std::string s;
    for (auto c : supports) s += (s.empty() ? "" : ",") + std::string(to_string(c));
    return s;
  }

  static TrainerProtocol own() { return {2, all_capabilities(), false, {}, {}}; }

  // The run summary's env keys ("trainer_protocol", "trainer_supports") and back; an external run
  // without them (written before protocol 2) reads as protocol 1.
  void to_env(std::map<std::string, std::string>& env) const {
    env["trainer_protocol"] = std::to_string(version);
    env["trainer_supports"] = supports_text();
    if (!compute.empty()) env["trainer_compute"] = compute;
    if (!observed_compute.empty()) env["trainer_observed_compute"] = observed_compute;
  }
  static TrainerProtocol from_env(const std::map<std::string, std::string>& env) {
    const auto t = env.find("trainer");
    if (t == env.end() || t->second != "external") return own();
    TrainerProtocol p;
    if (auto v = env.find("trainer_protocol"); v != env.end()) p.version = std::stoi(v->second);
    if (auto s = env.find("trainer_supports"); s != env.end())
      for (auto c : all_capabilities())
        if (("," + s->second + ",").find("," + std::string(to_string(c)) + ",") != std::string::npos)
          p.supports.push_back(c);
    if (auto c = env.find("trainer_compute"); c != env.end()) p.compute = c->second;
    if (auto c = env.find("trainer_observed_compute"); c != env.end()) p.observed_compute = c->second;
    return p;
  }
};

}  // namespace lockstep
