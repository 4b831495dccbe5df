#include "harness/util/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lockstep::util {
namespace fs = std::filesystem;

namespace {
[[noreturn]] void fail(const fs::path& p, const char* what) {
  throw std::runtime_error(p.string() + ": " + what + ": " + std::strerror(errno));
}
void write_all(int fd, const char* data, size_t n, const fs::path& p) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(p, "write failed");
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}
}  // namespace

void write_atomic(const fs::path& path, std::string_view content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  // pid + a per-process counter: two threads (the watchdog and the main thread both writing the
  // summary) never share a temp file, so whichever renames last leaves a whole file.
  static std::atomic<uint64_t> seq{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(seq.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, "cannot create");
  try {
    write_all(fd, content.data(), content.size(), tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    fail(path, "cannot rename into place");
  }
}

fs::path timestamped_run_dir(const std::string& what) {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  const std::string stem = std::string(buf) + "-" + what;
  fs::path p = fs::path("runs") / stem;
  for (int i = 2; fs::exists(p); ++i) p = fs::path("runs") / (stem + "-" + std::to_string(i));
  return p;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_nonempty_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

LineLog::LineLog(const fs::path& path, bool truncate) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0),
               0644);
  if (fd_ < 0) fail(path, "cannot open for append");
}

LineLog& LineLog::operator=(LineLog&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

LineLog::~LineLog() {
  if (fd_ >= 0) ::close(fd_);
}

void LineLog::append(std::string line) {
  line += '\n';
  write_all(fd_, line.data(), line.size(), "metrics log");
}

}  // namespace lockstep::util
