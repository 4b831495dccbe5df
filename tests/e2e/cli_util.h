// Helpers for tests that run the real `lockstep` binary (from the repository root) and read what
// it wrote. No mocks: real processes, real files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/runs/run_folder.h"
#include "harness/util/malloc_tuning.h"
#include "harness/util/process.h"

namespace lockstep::testing {

namespace fs = std::filesystem;

// The build's own Python first in PATH (LOCKSTEP_TEST_PYTHON's folder: Debian's /usr/bin, where
// python3-torch 1.13 is, for the Debian build; the project venv's bin, torch 2.11.0 from the same
// wheel, for the wheel build), so that `python3` in a trainer's command runs on this build's
// LibTorch: a pyenv or other python3 earlier in PATH may lack torch. The child runs inherit it.
// Call once at static initialisation: `const bool kBuildPythonFirst = build_python_first();`.
inline bool build_python_first() {
  const std::string dir = fs::path(LOCKSTEP_TEST_PYTHON).parent_path().string();
  const char* path = std::getenv("PATH");
  ::setenv("PATH", (dir + ":/usr/bin:/bin" + (path ? ":" + std::string(path) : "")).c_str(), 1);
  return true;
}

// A fresh folder, removed at the end of the test unless LOCKSTEP_KEEP_TEST_DIRS is set.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("lockstep-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    if (!std::getenv("LOCKSTEP_KEEP_TEST_DIRS")) fs::remove_all(path_);
  }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& s) const { return (path_ / s).string(); }

 private:
  fs::path path_;
};

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

// How run_lockstep starts the binary. Tuned: with GLIBC_TUNABLES already holding the malloc
// settings the binary would re-execute itself to get (util::with_malloc_tunables, the one list),
// so it does not re-execute: the first exec's dynamic linking of LibTorch's ~290 libraries is
// ~0.45 s of CPU per start, measured here, and the suite starts the binary ~200 times. Fresh: as a
// user starts it, re-executing itself (Run.SameConfigTwice... starts one run each way).
enum class Start { Tuned, Fresh };

// Runs `lockstep ARGS...` from the source root; output captured through a log file.
inline CliResult run_lockstep(const std::vector<std::string>& args, const fs::path& log_dir,
                              double timeout_s = 900, Start start = Start::Tuned) {
  std::vector<std::string> argv{LOCKSTEP_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  fs::path log = log_dir / ("cli-" + std::to_string(std::random_device{}()) + ".log");
  std::vector<std::string> env;
  if (start == Start::Tuned && !util::malloc_tuning_disabled()) {
    const char* current = std::getenv("GLIBC_TUNABLES");
    env.push_back("GLIBC_TUNABLES=" + util::with_malloc_tunables(current ? current : ""));
  }
  const fs::path cwd = fs::current_path();
  fs::current_path(LOCKSTEP_SOURCE_DIR);
  util::ExitStatus st;
  try {
    st = util::wait_for(util::spawn(argv, log, "", env), timeout_s);
  } catch (...) {
    fs::current_path(cwd);
    throw;
  }
  fs::current_path(cwd);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  return CliResult{st.signaled ? 128 + st.signal : st.code, ss.str()};
}

inline nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << "missing " << p;
  return nlohmann::json::parse(in);
}

inline std::vector<double> losses(const fs::path& metrics) {
  std::vector<double> v;
  for (const auto& r : runs::read_metrics(metrics)) v.push_back(r.loss);
  return v;
}

// Lines in a command's output (each ends in '\n'): "one line on stderr" checks.
inline size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace lockstep::testing
