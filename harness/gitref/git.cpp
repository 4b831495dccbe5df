#include "harness/gitref/git.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "harness/util/exit_codes.h"

extern char** environ;

namespace lockstep::gitref {
namespace fs = std::filesystem;

namespace {

std::string git_read_all(int fd) {
  std::string s;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      s.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return s;
}

std::string git_first_line(const std::string& s) {
  const auto end = s.find('\n');
  std::string line = s.substr(0, end);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string git_trimmed(const std::string& s) { return git_first_line(s); }

}  // namespace

GitOutput run_git(const fs::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"git", "-C", dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {127, "", "pipe failed"};
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return {127, "", "pipe failed"};
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, "git", &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  GitOutput r;
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    r.code = 127;
    r.err = "cannot start git (is it installed and in PATH?)";
    return r;
  }
  r.out = git_read_all(out[0]);  // git's stderr is small: it fits the pipe while stdout drains
  r.err = git_read_all(err[0]);
  ::close(out[0]);
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

fs::path top_folder(const fs::path& dir) {
  const auto r = run_git(dir, {"rev-parse", "--show-toplevel"});
  if (r.code == 127) throw UsageError(r.err);
  if (r.code != 0 || git_trimmed(r.out).empty())
    throw UsageError(dir.string() + " is not in a git repository");
  return git_trimmed(r.out);
}

compare::GitCommit resolve(const fs::path& repo, const std::string& ref, const std::string& flag) {
  if (ref.empty() || ref[0] == '-')
    throw UsageError(flag + " '" + ref + "': not a commit in " + repo.string());
  const auto r = run_git(repo, {"rev-parse", "--verify", "--quiet", "--end-of-options",
                                ref + "^{commit}"});
  if (r.code != 0 || git_trimmed(r.out).empty())
    throw UsageError(flag + " " + ref + ": not a commit in " + repo.string());
  compare::GitCommit c;
  c.ref = ref;
  c.sha = git_trimmed(r.out);
  const auto s = run_git(repo, {"log", "-1", "--format=%s", c.sha});
  c.subject = s.code == 0 ? git_trimmed(s.out) : "";
  return c;
}

std::vector<std::string> uncommitted_changes(const fs::path& repo) {
  const auto r = run_git(repo, {"status", "--porcelain", "--untracked-files=no"});
  if (r.code != 0) throw UsageError("git status failed in " + repo.string() + ": " + git_first_line(r.err));
  std::vector<std::string> files;
  size_t at = 0;
  while (at < r.out.size()) {
    auto end = r.out.find('\n', at);
    if (end == std::string::npos) end = r.out.size();
    const std::string line = r.out.substr(at, end - at);
    if (line.size() > 3) files.push_back(line.substr(3));
    at = end + 1;
  }
  return files;
}

bool has_file(const fs::path& repo, const std::string& sha, const std::string& path) {
  const auto r = run_git(repo, {"cat-file", "-t", sha + ":" + path});
  return r.code == 0 && git_trimmed(r.out) == "blob";
}

std::vector<compare::ChangedFile> parse_name_status(const std::string& z) {
  std::vector<std::string> fields;
  size_t at = 0;
  while (at < z.size()) {
    auto end = z.find('\0', at);
    if (end == std::string::npos) end = z.size();
    fields.push_back(z.substr(at, end - at));
    at = end + 1;
  }
  std::vector<compare::ChangedFile> files;
  for (size_t i = 0; i < fields.size();) {
    const std::string& status = fields[i++];
    if (status.empty()) continue;
    compare::ChangedFile f;
    f.change = compare::file_change_from_status(status[0]);
    const bool two = f.change == compare::FileChange::Renamed || f.change == compare::FileChange::Copied;
    if (two && i + 1 < fields.size()) {
      f.old_path = fields[i++];
      f.path = fields[i++];
    } else if (i < fields.size()) {
      f.path = fields[i++];
    }
    files.push_back(std::move(f));
  }
  return files;
}

std::vector<compare::ChangedFile> changed_files(const fs::path& repo, const std::string& base_sha,
                                                const std::string& head_sha) {
  const auto r = run_git(repo, {"diff", "--name-status", "-z", "-M", "--no-ext-diff", base_sha,
                                head_sha, "--"});
  if (r.code != 0)
    throw UsageError("git diff " + base_sha.substr(0, 10) + " " + head_sha.substr(0, 10) +
                     " failed: " + git_first_line(r.err));
  return parse_name_status(r.out);
}

}  // namespace lockstep::gitref
