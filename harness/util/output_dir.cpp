#include "harness/util/output_dir.h"

#include <system_error>

namespace lockstep::util {
namespace fs = std::filesystem;

std::string output_dir_problem(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return "";
  if (fs::exists(dir, ec)) return "exists and is not a folder";
  // The first folder on the way that does not exist yet: what the probe creates and removes.
  fs::path first_missing = dir;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    first_missing = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) return "cannot create this folder: " + ec.message();
  fs::remove_all(first_missing, ec);
  return "";
}

}  // namespace lockstep::util
