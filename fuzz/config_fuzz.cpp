// libFuzzer target over config loading (build and run: fuzz/run-config-fuzz.sh SECONDS).
//
// The input is a TOML file, optionally followed by a line "--set" and one override per line.
// Config::parse may only ever throw ConfigError, with a one-line what(); any other exception, a
// crash or a sanitizer report is a finding. A successful parse must survive to_toml() + re-parse
// with the same values, the same hash() and an empty diff().
//
// `extends` resolves against the label's folder, SANDBOX/variants/, in a fresh temp folder that
// holds only baseline.toml (a valid base, so the seeds' `extends = "../baseline.toml"` overlays)
// and loop.toml (extends itself); anything else fails with a ConfigError. Inputs whose `extends`
// would leave the sandbox (or holds a NUL) are skipped: the fuzzer never reads arbitrary files
// (think /dev/zero).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

// As in harness/config/config.cpp (one definition of toml++'s inline parser in the binary).
#ifndef TOML_ASSERT
#define TOML_ASSERT(expr) static_assert(true)
#endif
#include <toml++/toml.h>

#include "harness/config/config.h"

namespace fs = std::filesystem;
using lockstep::config::Config;
using lockstep::config::ConfigError;

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// The sandbox folder, created once and removed at exit (never destroyed: the exit hook uses it).
const fs::path& sandbox() {
  static const fs::path& dir = *new fs::path([] {
    std::string tmpl = (fs::temp_directory_path() / "lockstep-config-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) finding("mkdtemp failed", tmpl);
    fs::path d = tmpl;
    fs::create_directory(d / "variants");
    std::ofstream(d / "baseline.toml")
        << "[run]\nname = \"baseline\"\nseed = 7\nsteps = 20\n[model]\npreset = \"tiny\"\n"
           "[optim]\nlr = 1e-3\n";
    std::ofstream(d / "loop.toml") << "extends = \"loop.toml\"\n";
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(sandbox(), ec);
    });
    return d;
  }());
  return dir;
}

// False when a top-level `extends` string could name a file outside the sandbox.
bool extends_is_contained(std::string_view text, const fs::path& dir) {
  try {
    toml::table root = toml::parse(text);
    if (const auto* s = root["extends"].as_string()) {
      if (s->get().find('\0') != std::string::npos) return false;
      fs::path rel = (dir / s->get()).lexically_normal().lexically_relative(sandbox());
      return !rel.empty() && *rel.begin() != "..";
    }
  } catch (const toml::parse_error&) {
    // Config::parse fails on the same syntax error before it looks at extends.
  }
  return true;
}

void check_one_line(const ConfigError& e) {
  const std::string w = e.what();
  if (w.find('\n') != std::string::npos || w.find('\r') != std::string::npos)
    finding("multi-line ConfigError", w);
  if (w.empty() || w.find(": ") == std::string::npos) finding("malformed ConfigError", w);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view text = input;
  std::vector<std::string> overrides;
  if (auto at = input.find("\n--set\n"); at != std::string_view::npos) {
    text = input.substr(0, at);
    std::string_view rest = input.substr(at + 7);
    while (!rest.empty()) {
      auto nl = rest.find('\n');
      overrides.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
  }
  const fs::path dir = sandbox() / "variants";
  if (!extends_is_contained(text, dir)) return -1;  // not added to the corpus

  const std::string label = (dir / "fuzz.toml").string();
  try {
    Config c = Config::parse(text, label, overrides);
    const std::string plain = c.to_toml();
    (void)c.to_toml(true);
    const std::string h = c.hash();
    if (h.size() != 16 || h != c.hash()) finding("unstable hash", h);
    Config again = [&] {
      try {
        return Config::parse(plain, (dir / "again.toml").string());
      } catch (const ConfigError& e) {
        finding("to_toml() output does not re-parse", std::string(e.what()) + "\n" + plain);
      }
    }();
    if (again.hash() != h) finding("hash changed on re-parse", plain);
    if (again.to_toml() != plain)
      finding("to_toml changed on re-parse", plain + "\n---\n" + again.to_toml());
    if (!lockstep::config::diff(c, again).empty()) finding("diff not empty after re-parse", plain);
    for (const auto& [key, entry] : c.entries())
      if (!(again.entries().at(key).value == entry.value))
        finding("value changed on re-parse", key);
  } catch (const ConfigError& e) {
    check_one_line(e);
  }
  return 0;
}
