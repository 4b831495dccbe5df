#include "harness/dist/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "harness/compat/torch_compat.h"
#include "harness/vocab/step_turn.h"

extern char** environ;

namespace lockstep::dist {
namespace {

volatile sig_atomic_t g_forward_signal = 0;
void on_signal(int sig) {
  g_forward_signal = sig;
}

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
  std::string pending;
  bool running = true;
  int code = 0;
  std::string how;
};

// A timing run taking turns (harness/runs/child_run.h): one turn socket per rank, and each
// rank's CPUs when pinned. Empty when this run takes no turns (or the lists do not fit the world).
struct RankTurns {
  std::vector<int> fds;
  std::vector<std::vector<int>> cpus;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);) out.push_back(item);
  return out;
}

RankTurns rank_turns_from_env(int world) {
  RankTurns t;
  const char* fds = std::getenv(train::kTurnFdsEnv);
  const char* cpus = std::getenv(train::kRankCpusEnv);
  try {
    if (fds)
      for (const auto& f : split(fds, ',')) t.fds.push_back(std::stoi(f));
    if (cpus)
      for (const auto& list : split(cpus, ';')) {
        t.cpus.emplace_back();
        for (const auto& c : split(list, ',')) t.cpus.back().push_back(std::stoi(c));
      }
  } catch (const std::exception&) {
    t = {};
  }
  if (static_cast<int>(t.fds.size()) != world) {
    if (!t.fds.empty())
      std::cerr << "launcher: " << train::kTurnFdsEnv << " names " << t.fds.size()
                << " sockets for " << world << " ranks: no turns\n";
    for (int fd : t.fds) ::close(fd);
    t.fds.clear();
  }
  if (static_cast<int>(t.cpus.size()) != world) t.cpus.clear();
  return t;
}

std::vector<std::string> rank_env(int rank, int world, int port, bool turns) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    for (const char* k : {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
                          "MASTER_ADDR=", "MASTER_PORT=", "LOCKSTEP_AGENT_STORE=",
                          "LOCKSTEP_TURN_FDS=", "LOCKSTEP_RANK_CPUS=", "LOCKSTEP_TURN_FD="})
      if (kv.rfind(k, 0) == 0) kv.clear();
    if (!kv.empty()) env.push_back(kv);
  }
  if (turns) env.push_back(std::string(train::StepTurn::kEnv) + "=3");  // its own socket, as fd 3
  env.push_back("RANK=" + std::to_string(rank));
  env.push_back("WORLD_SIZE=" + std::to_string(world));
  env.push_back("LOCAL_RANK=" + std::to_string(rank));
  env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(world));
  env.push_back("MASTER_ADDR=127.0.0.1");
  env.push_back("MASTER_PORT=" + std::to_string(port));
  env.push_back("LOCKSTEP_AGENT_STORE=1");
  return env;
}

void flush_lines(Child& c, int rank, bool all) {
  size_t pos;
  while ((pos = c.pending.find('\n')) != std::string::npos) {
    std::cout << "[rank " << rank << "] " << c.pending.substr(0, pos + 1);
    c.pending.erase(0, pos + 1);
  }
  if (all && !c.pending.empty()) {
    std::cout << "[rank " << rank << "] " << c.pending << "\n";
    c.pending.clear();
  }
  std::cout.flush();
}

}  // namespace

int launch(const LaunchSpec& spec) {
  // The agent store: ranks connect to it as clients (like torchrun's agent).
  c10d::TCPStoreOptions opts;
  opts.port = 0;
  opts.isServer = true;
  opts.waitWorkers = false;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
  const int port = store->getPort();

  const RankTurns turns = rank_turns_from_env(spec.nproc);
  std::vector<Child> kids(static_cast<size_t>(spec.nproc));
  for (int r = 0; r < spec.nproc; ++r) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("launcher: pipe failed");
    auto env = rank_env(r, spec.nproc, port, !turns.fds.empty());
    cpu_set_t pin;
    CPU_ZERO(&pin);
    if (!turns.cpus.empty())
      for (int c : turns.cpus[static_cast<size_t>(r)]) CPU_SET(c, &pin);
    std::vector<char*> envp, argv;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.args;
    argv.push_back(const_cast<char*>(spec.exe.c_str()));
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("launcher: fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(3);
      ::setpgid(0, 0);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      if (!turns.fds.empty()) {  // rank r's turn socket as fd 3, the other ranks' closed
        const int mine = turns.fds[static_cast<size_t>(r)];
        if (mine != 3) ::dup2(mine, 3);
        for (int fd : turns.fds)
          if (fd != 3) ::close(fd);
      }
      // Pinned before exec: every thread the rank starts inherits it.
      if (!turns.cpus.empty()) ::sched_setaffinity(0, sizeof pin, &pin);
      ::execve(spec.exe.c_str(), argv.data(), envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    kids[static_cast<size_t>(r)].pid = pid;
    kids[static_cast<size_t>(r)].out_fd = fds[0];
  }
  for (int fd : turns.fds) ::close(fd);  // the ranks hold them: a rank's exit is its peer's EOF

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> first_failure;
  int running = spec.nproc;
  while (running > 0) {
    std::vector<pollfd> pfds;
    std::vector<int> which;
    for (int r = 0; r < spec.nproc; ++r)
      if (kids[static_cast<size_t>(r)].out_fd >= 0) {
        pfds.push_back(pollfd{kids[static_cast<size_t>(r)].out_fd, POLLIN, 0});
        which.push_back(r);
      }
    if (!pfds.empty())
      ::poll(pfds.data(), pfds.size(), 100);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = kids[static_cast<size_t>(which[i])];
      char buf[4096];
      ssize_t n = ::read(c.out_fd, buf, sizeof buf);
      if (n > 0) {
        c.pending.append(buf, static_cast<size_t>(n));
        flush_lines(c, which[i], false);
      } else {
        flush_lines(c, which[i], true);
        ::close(c.out_fd);
        c.out_fd = -1;
      }
    }
    if (g_forward_signal) {
      for (auto& c : kids)
        if (c.running) ::kill(c.pid, g_forward_signal);
      g_forward_signal = 0;
    }
    for (int r = 0; r < spec.nproc; ++r) {
      Child& c = kids[static_cast<size_t>(r)];
      if (!c.running) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      c.running = false;
      --running;
      if (WIFEXITED(status)) {
        const int raw = WEXITSTATUS(status);
        c.how = "exit code " + std::to_string(raw);
        // The launcher returns the worst rank's code: keep it one of the documented 0-3 (an
        // exec failure is _exit(127), a crash in a library may exit with anything).
        c.code = raw >= 0 && raw <= 3 ? raw : 3;
      } else {
        c.code = 3;
        c.how = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                ::strsignal(WTERMSIG(status)) + ")";
      }
      if (c.code != 0) {
        if (!first_failure) first_failure = Clock::now();
        try {
          if (!store->check({"lost"})) {
            const std::string v = "rank " + std::to_string(r) + " (" + c.how + ")";
            store->set("lost", std::vector<uint8_t>(v.begin(), v.end()));
          }
        } catch (...) {
        }
        std::cout << "[launcher] rank " << r << " ended: " << c.how << std::endl;
      }
    }
    if (first_failure && running > 0 &&
        std::chrono::duration<double>(Clock::now() - *first_failure).count() > spec.grace_s) {
      for (int r = 0; r < spec.nproc; ++r) {
        Child& c = kids[static_cast<size_t>(r)];
        if (!c.running) continue;
        std::cout << "[launcher] rank " << r << " still running " << spec.grace_s
                  << " s after a failure: killing it" << std::endl;
        ::kill(-c.pid, SIGKILL);
        ::kill(c.pid, SIGKILL);
      }
    }
  }
  for (int r = 0; r < spec.nproc; ++r) {  // whatever the ranks wrote before exiting
    Child& c = kids[static_cast<size_t>(r)];
    char buf[4096];
    ssize_t n;
    while (c.out_fd >= 0 && (n = ::read(c.out_fd, buf, sizeof buf)) > 0)
      c.pending.append(buf, static_cast<size_t>(n));
    if (c.out_fd >= 0) ::close(c.out_fd);
    flush_lines(c, r, true);
  }
  int worst = 0;
  for (const auto& c : kids) worst = std::max(worst, c.code);
  return worst;
}

}  // namespace lockstep::dist
