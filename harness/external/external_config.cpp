#include "harness/external/external_config.h"

#include <cctype>
#include <filesystem>

#include "harness/external/placeholders.h"

namespace lockstep::external {
namespace fs = std::filesystem;
using config::KeySpec;
using config::Knob;

namespace {

// The folder of the file that set `key` (the working directory for a --set override).
fs::path origin_dir(const config::Config& c, const std::string& key) {
  const std::string& origin = c.where(key).file;  // "<--set ...>" for overrides
  return origin.rfind("<", 0) == 0 ? fs::path() : fs::path(origin).parent_path();
}

std::string absolute_dir(const fs::path& p) {
  std::error_code ec;
  const auto abs = fs::absolute(p.empty() ? fs::path(".") : p, ec);
  return (ec ? p : abs).lexically_normal().string();
}

bool env_name_ok(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  for (char ch : k)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

void finalize_external(config::Config& c) {
  const auto& cmd = c.strings("external.command");
  if (cmd.empty()) {  // Lockstep's own trainer: the other keys would be silently ignored
    const bool set[] = {c.has_value("external.workdir"), !c.table("external.env").empty(),
                        c.has_value("external.flops_per_token"),
                        c.number("external.timeout_s") != 0};
    const char* keys[] = {"external.workdir", "external.env", "external.flops_per_token",
                          "external.timeout_s"};
    for (size_t i = 0; i < 4; ++i)
      if (set[i])
        c.fail(keys[i], std::string(keys[i]) +
                            " is set but external.command is empty (no external trainer)");
    return;
  }
  // Lockstep profiles only its own trainer: an external arm sets no steps aside for it (they
  // would only be untimed steps).
  if (c.integer("profile.window") != 0) c.resolve("profile.window", int64_t{0}, "external.command");
  if (cmd[0].empty()) c.fail("external.command", "the first element (the program) is empty");
  for (const auto& arg : cmd)
    if (auto err = placeholder_error(arg)) c.fail("external.command", *err);
  for (const auto& [k, v] : c.table("external.env")) {
    if (!env_name_ok(k))
      c.fail("external.env", "\"" + k + "\" is not an environment variable name");
    if (k == "LOCKSTEP_METRICS" || k == "LOCKSTEP_SEED")
      c.fail("external.env", k + " is set by Lockstep itself");
    if (auto err = placeholder_error(v)) c.fail("external.env", k + ": " + *err);
  }
  if (c.integer("parallel.world_size") != 1)
    c.fail("parallel.world_size",
           "an external trainer is one process (it starts its own ranks if it has any): "
           "world_size must be 1, got " + std::to_string(c.integer("parallel.world_size")));
  // workdir: relative to the file that sets it; by default the folder of the file that sets
  // command, so `command = ["python3", "train.py"]` finds train.py next to the config file.
  if (c.has_value("external.workdir")) {
    fs::path p = c.str("external.workdir");
    if (p.is_relative()) p = origin_dir(c, "external.workdir") / p;
    c.resolve("external.workdir", absolute_dir(p), "external.workdir");
  } else {
    c.resolve("external.workdir", absolute_dir(origin_dir(c, "external.command")),
              "external.command");
  }
}

// A change of workdir that comes with switching between Lockstep's trainer and an external one is
// part of that switch (external.command says it); between two external arms it is a change of the
// code that runs (two checkouts of the team's trainer).
Knob workdir_knob(const config::Config& a, const config::Config& b) {
  return is_external(a) && is_external(b) ? Knob::Exact : Knob::None;
}

}  // namespace

bool is_external(const config::Config& cfg) { return !cfg.strings("external.command").empty(); }

const config::SectionSchema& external_schema() {
  static const config::SectionSchema s{
      "external",
      "An arm trained by any program instead of Lockstep's own (docs/extending.md \"An external trainer\").",
      {
          KeySpec::Strings("command", {},
                           "the trainer's argv; placeholders {seed} {steps} {metrics} {out} "
                           "(empty: Lockstep's own trainer)")
              .kind(Knob::Exact),
          KeySpec::Str("workdir", std::nullopt,
                       "its working folder (relative to the config file; default: the folder of "
                       "the file that sets command)")
              .judged_by(workdir_knob),
          KeySpec::Table("env", "environment variables added for it (placeholders allowed)")
              .kind(Knob::Exact),
          KeySpec::Float("flops_per_token", std::nullopt,
                         "model FLOPs per token, for MFU (unset: MFU unknown)")
              .range(0, 1e18)
              .kind(Knob::None)
              .unset_by_default(),
          KeySpec::Float("timeout_s", 0.0,
                         "kill the trainer after this many seconds in all (0 = no limit)")
              .range(0, 1e9)
              .kind(Knob::None),
      },
      finalize_external,
  };
  return s;
}

ExternalConfig ExternalConfig::from(const config::Config& c) {
  ExternalConfig e;
  e.command = c.strings("external.command");
  if (c.has_value("external.workdir")) e.workdir = c.str("external.workdir");
  e.env = c.table("external.env");
  if (c.has_value("external.flops_per_token")) e.flops_per_token = c.number("external.flops_per_token");
  e.timeout_s = c.number("external.timeout_s");
  return e;
}

}  // namespace lockstep::external
