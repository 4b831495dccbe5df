// The --out check every command that writes a folder makes first (harness/util/output_dir.h).
#pragma once

#include <string>

#include "harness/exit_codes.h"
#include "harness/util/output_dir.h"

namespace lockstep::cli {

// Throws UsageError ("--out DIR: cannot create this folder: No such file or directory") when
// `dir` cannot be an output folder; an empty `dir` (the command's default) is not checked.
inline void check_out_dir(const std::string& dir, const std::string& flag = "--out") {
  if (dir.empty()) return;
  const std::string why = util::output_dir_problem(dir);
  if (!why.empty()) throw UsageError(flag + " " + dir + ": " + why);
}

}  // namespace lockstep::cli
