// Output folders named on the command line (--out): checked before any work starts, so a folder
// that cannot be made is a usage error (exit 2, one line) and not a run that fails later.
#pragma once

#include <filesystem>
#include <string>

namespace lockstep::util {

// Why `dir` cannot serve as an output folder ("" when it is a folder or can be made one): "exists
// and is not a folder", or "cannot create this folder: <reason>". To know, it makes the missing
// folders and removes them again, so an error found later leaves nothing behind.
std::string output_dir_problem(const std::filesystem::path& dir);

}  // namespace lockstep::util
