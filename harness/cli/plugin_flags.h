// `--plugin FILE` (repeatable) for the commands that list or check a plugin's kernels
// (`variants`, `conformance`): loads each library into the global catalog and returns their
// absolute paths; a library that does not load is a UsageError naming it (exit 2).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "harness/registry/catalog.h"
#include "harness/util/exit_codes.h"

namespace lockstep::cli {

inline std::vector<std::string> load_plugin_flags(const std::vector<std::string>& plugins) {
  std::vector<std::string> files;
  for (const auto& p : plugins) {
    std::error_code ec;
    const std::string abs = std::filesystem::absolute(p, ec).lexically_normal().string();
    try {
      registry::Catalog::global().load_plugin(abs);
    } catch (const std::exception& e) {
      throw UsageError(p + ": " + e.what());
    }
    files.push_back(abs);
  }
  return files;
}

}  // namespace lockstep::cli
