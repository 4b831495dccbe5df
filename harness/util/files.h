// File output that never leaves a half-written file behind.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace lockstep::util {

// Writes `content` to a temp file next to `path`, fsyncs, then renames over `path`.
// Throws std::runtime_error naming the path on failure.
void write_atomic(const std::filesystem::path& path, std::string_view content);

std::string read_file(const std::filesystem::path& path);  // throws naming the path

// A fresh output folder name: runs/<YYYYmmdd-HHMMSS>-<what>, with -2, -3 ... if it exists.
std::filesystem::path timestamped_run_dir(const std::string& what);

// The last non-empty line of a text file (a run's lockstep.log: usually the error); "" if the
// file is missing or empty. Never throws.
std::string last_nonempty_line(const std::filesystem::path& path);

// An append-only line log (metrics.jsonl): each line goes out in one write(2) and is flushed, so
// a crash or SIGKILL leaves only complete lines.
class LineLog {
 public:
  LineLog() = default;
  explicit LineLog(const std::filesystem::path& path, bool truncate = true);
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;
  LineLog(LineLog&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  LineLog& operator=(LineLog&& o) noexcept;
  ~LineLog();
  void append(std::string line);  // adds the '\n'
  bool is_open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace lockstep::util
