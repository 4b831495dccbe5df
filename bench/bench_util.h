// Shared by the benchmarks: run the real `lockstep` binary from the source root, read JSON.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/util/process.h"

namespace lockstep::bench {

inline int run(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<std::string> argv{LOCKSTEP_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(LOCKSTEP_SOURCE_DIR);
  auto st = util::wait_for(util::spawn(argv, log), 0);
  std::filesystem::current_path(cwd);
  return st.signaled ? 128 + st.signal : st.code;
}

inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace lockstep::bench
