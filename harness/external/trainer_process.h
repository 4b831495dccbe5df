// The external trainer as a process: started in its own working folder and process group, with
// its output in a log file, killed with Lockstep (PR_SET_PDEATHSIG) so a killed `lockstep run`
// never leaves a trainer behind, and stopped as a group (a shell script's children too).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/util/process.h"

namespace lockstep::external {

// The program could not be started (not found, not executable). what() is one line.
struct StartError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class TrainerProcess {
 public:
  // argv[0] is looked up like a shell does: a name without '/' in PATH, a path relative to
  // `workdir`. `env` entries are added to (or replace) Lockstep's own environment. `fds`: (fd of
  // this process, fd number in the trainer) pairs it inherits (the turn's socket). Throws
  // StartError.
  TrainerProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                 const std::filesystem::path& workdir, const std::filesystem::path& log,
                 const std::vector<std::pair<int, int>>& fds = {});
  ~TrainerProcess();  // stops it if it still runs
  TrainerProcess(const TrainerProcess&) = delete;
  TrainerProcess& operator=(const TrainerProcess&) = delete;

  // Its exit status once it has exited (reaped), else nullopt. Never blocks.
  std::optional<util::ExitStatus> poll();
  // SIGTERM to its process group, SIGKILL after `grace_s`; returns its exit status.
  util::ExitStatus stop(double grace_s = 3);
  const std::string& program() const { return program_; }  // the resolved argv[0]
  // Its peak resident memory (the process Lockstep started), once it has exited; 0 before.
  int64_t max_rss_bytes() const { return max_rss_bytes_; }

 private:
  pid_t pid_ = -1;
  std::optional<util::ExitStatus> status_;
  std::string program_;
  int64_t max_rss_bytes_ = 0;
  bool reap(int options);  // wait4: true once it has exited (status_ and max_rss_bytes_ set)
};

// Where `name` resolves (PATH for a bare name, `workdir` for a relative path), or nullopt.
std::optional<std::string> find_program(const std::string& name, const std::filesystem::path& workdir);

}  // namespace lockstep::external
