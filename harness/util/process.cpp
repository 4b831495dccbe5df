#include "harness/util/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace lockstep::util {
namespace fs = std::filesystem;

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("lockstep");
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

bool pin_to_cpus(pid_t pid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  return CPU_COUNT(&set) > 0 && ::sched_setaffinity(pid, sizeof set, &set) == 0;
}

std::vector<int> thread_ids() {
  std::vector<int> out;
  std::error_code ec;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    char* rest = nullptr;
    const long tid = std::strtol(name.c_str(), &rest, 10);
    if (rest != name.c_str() && *rest == '\0' && tid > 0) out.push_back(static_cast<int>(tid));
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
bool set_policy(int tid, int policy) {  // a non-real-time policy: priority 0
  sched_param p{};
  return ::sched_setscheduler(static_cast<pid_t>(tid), policy, &p) == 0;
}
}  // namespace

bool run_only_when_idle(int tid) {
  return set_policy(tid, SCHED_IDLE);
}
bool run_normally(int tid) {
  return set_policy(tid, SCHED_OTHER);
}

long available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
}

void die_with_parent() {
  const char* v = std::getenv(kParentPidEnv);
  if (v == nullptr || *v == '\0') return;
  const long parent = std::strtol(v, nullptr, 10);
  // Once: this process's own children (a launcher's ranks, an external trainer) have another
  // parent, and spawn() names it afresh for those it starts.
  ::unsetenv(kParentPidEnv);
  if (parent <= 0) return;
  if (::getppid() == static_cast<pid_t>(parent)) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // The parent may have died between the check and the prctl: then nothing would fire.
    if (::getppid() != static_cast<pid_t>(parent)) ::_exit(128 + SIGKILL);
    return;
  }
  // Started through something in between (a shell wrapper): that one's death is not ours to
  // follow. But if the process that spawned us is already gone, so is our reason to run.
  if (::kill(static_cast<pid_t>(parent), 0) != 0 && errno == ESRCH) ::_exit(128 + SIGKILL);
}

Child spawn(const std::vector<std::string>& argv, const fs::path& log, const std::string& label,
            const std::vector<std::string>& env, const std::vector<std::pair<int, int>>& fds) {
  if (log.has_parent_path()) fs::create_directories(log.parent_path());
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  for (const auto& [from, to] : fds) posix_spawn_file_actions_adddup2(&fa, from, to);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills the arm's ranks too
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> merged;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool replaced = kv.rfind(std::string(kParentPidEnv) + "=", 0) == 0;
    for (const auto& x : env)
      replaced = replaced || kv.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
    if (!replaced) merged.push_back(kv);
  }
  merged.insert(merged.end(), env.begin(), env.end());
  merged.push_back(std::string(kParentPidEnv) + "=" + std::to_string(::getpid()));
  std::vector<char*> envp;
  for (auto& kv : merged) envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
  return Child{pid, label};
}

std::string ExitStatus::describe() const {
  if (timed_out) return "timed out (killed)";
  if (signaled)
    return "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
  return "exit code " + std::to_string(code);
}

ExitStatus wait_for(const Child& c, double timeout_s) {
  ExitStatus st;
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(c.pid, &status, timeout_s > 0 ? WNOHANG : 0);
    if (r == c.pid) {
      if (WIFSIGNALED(status)) {
        st.signaled = true;
        st.signal = WTERMSIG(status);
        st.code = st.timed_out ? 3 : 128 + st.signal;
      } else {
        st.code = WEXITSTATUS(status);
      }
      return st;
    }
    if (r < 0 && errno != EINTR)
      throw std::runtime_error("waitpid failed: " + std::string(std::strerror(errno)));
    if (timeout_s > 0 && !st.timed_out &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      st.timed_out = true;
      ::kill(-c.pid, SIGKILL);
      ::kill(c.pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<std::string> visible_gpus(const char* cuda_visible_devices,
                                      const fs::path& driver_gpus_dir) {
  std::vector<std::string> gpus;
  if (cuda_visible_devices) {  // set (even empty: no GPU) -> its entries, as CUDA reads them
    std::string item;
    for (const char* c = cuda_visible_devices;; ++c) {
      if (*c == ',' || *c == '\0') {
        if (!item.empty()) gpus.push_back(item);
        item.clear();
        if (*c == '\0') break;
      } else if (*c != ' ') {
        item += *c;
      }
    }
    return gpus;
  }
  std::error_code ec;
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(driver_gpus_dir, ec)) (void)e, ++n;
  for (size_t i = 0; i < n; ++i) gpus.push_back(std::to_string(i));
  return gpus;
}

std::vector<std::string> visible_gpus() {
  return visible_gpus(std::getenv("CUDA_VISIBLE_DEVICES"), "/proc/driver/nvidia/gpus");
}

std::vector<std::vector<std::string>> gpu_slots(const std::vector<std::string>& gpus, int per_run) {
  std::vector<std::vector<std::string>> slots;
  const size_t k = static_cast<size_t>(std::max(1, per_run));
  for (size_t first = 0; first + k <= gpus.size(); first += k) {
    std::string list;
    for (size_t i = first; i < first + k; ++i) list += (list.empty() ? "" : ",") + gpus[i];
    slots.push_back({"CUDA_VISIBLE_DEVICES=" + list});
  }
  return slots;
}

}  // namespace lockstep::util
