#include "harness/external/trainer_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

extern char** environ;

namespace lockstep::external {
namespace fs = std::filesystem;

namespace {

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

util::ExitStatus decode(int status) {
  util::ExitStatus st;
  if (WIFSIGNALED(status)) {
    st.signaled = true;
    st.signal = WTERMSIG(status);
    st.code = 128 + st.signal;
  } else {
    st.code = WEXITSTATUS(status);
  }
  return st;
}

}  // namespace

std::optional<std::string> find_program(const std::string& name, const fs::path& workdir) {
  if (name.find('/') != std::string::npos) {
    const fs::path p = fs::path(name).is_absolute() ? fs::path(name) : workdir / name;
    if (executable_file(p)) return p.lexically_normal().string();
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path d = dir.empty() ? workdir : fs::path(dir);
    const fs::path p = d.is_absolute() ? d / name : workdir / d / name;
    if (executable_file(p)) return p.string();
  }
  return std::nullopt;
}

TrainerProcess::TrainerProcess(const std::vector<std::string>& argv,
                               const std::map<std::string, std::string>& env,
                               const fs::path& workdir, const fs::path& log,
                               const std::vector<std::pair<int, int>>& fds) {
  std::error_code ec;
  if (!fs::is_directory(workdir, ec))
    throw StartError("external.workdir " + workdir.string() + " is not a folder");
  const auto program = find_program(argv.at(0), workdir);
  if (!program) {
    const bool path_like = argv[0].find('/') != std::string::npos;
    throw StartError("command not found: \"" + argv[0] + "\" (" +
                     (path_like ? "no executable file at " + (workdir / argv[0]).lexically_normal().string()
                                : std::string("not an executable in PATH")) +
                     ")");
  }
  program_ = *program;
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos && env.count(kv.substr(0, eq))) continue;
    merged.push_back(kv);
  }
  for (const auto& [k, v] : env) merged.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& kv : merged) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  const std::string log_path = log.string(), dir = workdir.string();
  const pid_t parent = ::getpid();
  int pipefd[2];  // carries exec's errno back; closed on a successful exec
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw StartError(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipefd[0]), ::close(pipefd[1]);
    throw StartError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);                        // its own group: stop() reaches its children
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);     // and it dies with Lockstep
    if (::getppid() != parent) ::_exit(127);  // Lockstep already gone
    int err = 0;
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0 || ::chdir(dir.c_str()) != 0) err = errno;
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    for (const auto& [from, to] : fds)  // dup2 clears close-on-exec on `to`
      if (!err && ::dup2(from, to) < 0) err = errno;
    if (!err) {
      ::execve(program_.c_str(), args.data(), envp.data());
      err = errno;
    }
    ssize_t w = ::write(pipefd[1], &err, sizeof err);
    (void)w;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: no window where stop() misses the group
  ::close(pipefd[1]);
  int child_err = 0;
  ssize_t n;
  do n = ::read(pipefd[0], &child_err, sizeof child_err);
  while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  pid_ = pid;
  if (n == static_cast<ssize_t>(sizeof child_err)) {
    reap(0);
    throw StartError("cannot start \"" + argv[0] + "\" (" + program_ + "): " +
                     std::strerror(child_err));
  }
}

TrainerProcess::~TrainerProcess() {
  if (pid_ > 0 && !status_) stop(1);
}

bool TrainerProcess::reap(int options) {
  if (status_) return true;
  int status = 0;
  struct rusage ru {};
  pid_t r;
  do r = ::wait4(pid_, &status, options, &ru);
  while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  status_ = decode(status);
  max_rss_bytes_ = static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux: KiB
  return true;
}

std::optional<util::ExitStatus> TrainerProcess::poll() {
  reap(WNOHANG);
  return status_;
}

util::ExitStatus TrainerProcess::stop(double grace_s) {
  if (!poll()) {
    ::kill(-pid_, SIGTERM);
    const auto t0 = std::chrono::steady_clock::now();
    while (!poll()) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > grace_s) {
        ::kill(-pid_, SIGKILL);
        reap(0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ::kill(-pid_, SIGKILL);  // whatever it left running in its group
  return *status_;
}

}  // namespace lockstep::external
