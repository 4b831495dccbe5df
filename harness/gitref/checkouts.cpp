#include "harness/gitref/checkouts.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/gitref/git.h"
#include "harness/util/exit_codes.h"

namespace lockstep::gitref {
namespace fs = std::filesystem;

namespace {

// The handler's slot: the removal command, written before the handlers are installed, read
// only by them (fork, execve and waitpid are async-signal-safe; nothing is allocated).
char g_removal[16384];
volatile sig_atomic_t g_armed = 0;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

// Runs /bin/sh -c CMD and waits; async-signal-safe.
void run_removal_command(const char* cmd) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    char sh[] = "/bin/sh", dash_c[] = "-c";
    char* argv[] = {sh, dash_c, const_cast<char*>(cmd), nullptr};
    char* envp[] = {nullptr};
    ::execve("/bin/sh", argv, envp);
    ::_exit(127);
  }
  if (pid < 0) return;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

void checkouts_on_signal(int sig) {
  if (g_armed) {
    g_armed = 0;
    run_removal_command(g_removal);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);  // dies of it as it would have: the caller sees 128 + sig
}

void arm_removal(const std::string& cmd) {
  std::strncpy(g_removal, cmd.c_str(), sizeof g_removal - 1);
  g_removal[sizeof g_removal - 1] = '\0';
  g_armed = 1;
  struct sigaction sa {};
  sa.sa_handler = checkouts_on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : kSignals) sigaddset(&sa.sa_mask, s);  // one handler at a time
  for (size_t i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &g_previous[i]);
}

void disarm_removal() {
  g_armed = 0;
  for (size_t i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

std::string sh_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string removal_command(const fs::path& repo, const fs::path& base, const fs::path& head,
                            const fs::path& folder) {
  // /bin/sh with an empty environment: git from the usual places.
  const std::string git = "PATH=/usr/local/bin:/usr/bin:/bin git -C " + sh_quoted(repo.string());
  return git + " worktree remove --force " + sh_quoted(base.string()) + " >/dev/null 2>&1; " + git +
         " worktree remove --force " + sh_quoted(head.string()) + " >/dev/null 2>&1; /bin/rm -rf " +
         sh_quoted(folder.string()) + "; " + git + " worktree prune >/dev/null 2>&1; :";
}

Checkouts::Checkouts(const fs::path& repo, const std::string& base_sha, const std::string& head_sha)
    : repo_(repo) {
  std::string tmpl = (fs::temp_directory_path() / "lockstep-refs-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw UsageError("cannot make a temporary folder for the checkouts: " +
                     std::string(std::strerror(errno)));
  folder_ = tmpl;
  base_ = folder_ / "base";
  head_ = folder_ / "head";
  arm_removal(removal_command(repo_, base_, head_, folder_));  // from here on, a signal removes them
  for (const auto& [path, sha] : {std::pair{base_, base_sha}, std::pair{head_, head_sha}}) {
    const auto r = run_git(repo_, {"worktree", "add", "--detach", "--quiet", path.string(), sha});
    if (r.code != 0) {
      remove();
      const auto nl = r.err.find('\n');
      throw UsageError("git worktree add " + sha.substr(0, 10) + " failed: " + r.err.substr(0, nl));
    }
  }
}

Checkouts::~Checkouts() { remove(); }

void Checkouts::remove() {
  if (removed_) return;
  removed_ = true;
  run_removal_command(removal_command(repo_, base_, head_, folder_).c_str());  // still armed meanwhile
  disarm_removal();
}

}  // namespace lockstep::gitref
