#include "harness/cli/compare_out.h"

#include <system_error>

#include "harness/util/exit_codes.h"
#include "reports/reporter.h"

namespace lockstep::cli {
namespace fs = std::filesystem;

std::vector<std::string> comparison_outputs() {
  std::vector<std::string> names;
  for (const auto& f : reports::report_formats())
    names.push_back(reports::make_reporter(f)->filename());
  names.push_back("arms");
  return names;
}

std::vector<std::string> earlier_comparison(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const auto& name : comparison_outputs())
    if (fs::exists(dir / name, ec)) found.push_back(name == "arms" ? "arms/" : name);
  return found;
}

void refuse_earlier_comparison(const std::string& dir, bool force) {
  if (dir.empty() || force) return;
  const auto found = earlier_comparison(dir);
  if (found.empty()) return;
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
  throw UsageError("--out " + dir + " already holds a comparison (" + list +
                   "); choose another --out, remove it, or give --force to replace it");
}

std::vector<std::string> remove_earlier_comparison(const fs::path& dir) {
  const auto found = earlier_comparison(dir);
  for (const auto& name : comparison_outputs()) fs::remove_all(dir / name);
  return found;
}

}  // namespace lockstep::cli
