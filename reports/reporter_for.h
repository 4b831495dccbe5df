// The one reporter interface (google/benchmark style): a reporter renders one kind of result in
// one format; each format is its own class in its own file, and each kind has a factory and a
// write function over its file formats:
//   the comparison     reports/reporter.h           console, json, markdown, html, junit
//   the bisection      reports/bisect_console.h     console
//   scaling            reports/scale/reporters.h    console, json, markdown, html
//   the diagnosis      reports/diagnose/reporters.h console, json, markdown, html; stages
//   the history report reports/history/reporters.h  console, json, markdown, html
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "harness/util/files.h"

namespace lockstep::reports {

template <class Result>
class ReporterFor {
 public:
  virtual ~ReporterFor() = default;
  virtual std::string format() const = 0;    // "console" | "json" | "markdown" | "html" | "junit"
  virtual std::string filename() const = 0;  // "" when not a file (console), else e.g. report.md
  virtual std::string render(const Result& r) const = 0;
};

template <class Result>
using ReporterList = std::vector<std::unique_ptr<ReporterFor<Result>>>;

// Writes every reporter that has a filename into dir (created if missing), each atomically
// (util::write_atomic); returns their paths in order.
template <class Result>
std::vector<std::filesystem::path> write_files(const ReporterList<Result>& reporters,
                                               const Result& r, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::filesystem::path> paths;
  for (const auto& rep : reporters) {
    if (rep->filename().empty()) continue;
    paths.push_back(dir / rep->filename());
    util::write_atomic(paths.back(), rep->render(r));
  }
  return paths;
}

}  // namespace lockstep::reports
