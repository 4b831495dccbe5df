// Small process helpers (torch-free): re-running this binary for child runs
// (harness/runs/child_run.h), and how many cores this process may use.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::util {

// Absolute path of the running executable (commands that spawn arms re-run it).
std::string self_exe();

// The cores this process may run on: its CPU affinity mask (taskset, cgroup cpusets), else the
// online cores; at least 1.
long available_cores();
// The CPUs this process may run on (sched_getaffinity), ascending; empty if it cannot tell.
std::vector<int> allowed_cpus();
// Restricts a process (all threads it starts from now on) to `cpus`; false if the kernel refuses.
bool pin_to_cpus(pid_t pid, const std::vector<int>& cpus);

// The thread ids of this process (/proc/self/task), ascending; empty if it cannot tell.
std::vector<int> thread_ids();
// Thread `tid` of this process runs only when its CPU has nothing else to run (SCHED_IDLE): it
// never preempts the process's other threads. false if the kernel refuses.
bool run_only_when_idle(int tid);
// Thread `tid` back to the default policy (SCHED_OTHER); false if the kernel refuses.
bool run_normally(int tid);

// A child process whose stdout and stderr go to a log file.
struct Child {
  pid_t pid = -1;
  std::string label;
};

// Starts argv[0] with argv[1..]; output appended to `log`. Throws std::runtime_error on failure.
// `env` entries ("NAME=value") are added to (or replace) this process's environment. `fds`
// (from, to): this process's descriptor `from` becomes the child's `to` (e.g. a socket handed over
// as fd 3); every other descriptor opened close-on-exec stays closed in the child.
Child spawn(const std::vector<std::string>& argv, const std::filesystem::path& log,
            const std::string& label = "", const std::vector<std::string>& env = {},
            const std::vector<std::pair<int, int>>& fds = {});

// Every child spawn() starts gets kParentPidEnv=<this process's pid>. A Lockstep process started
// so calls die_with_parent() first thing (before any library initializer): it asks the kernel for
// SIGKILL when the thread that spawned it ends (PR_SET_PDEATHSIG), so a compare killed by SIGKILL
// (timeout -s KILL, the OOM killer, a CI runner's hard stop) leaves no run behind holding a core
// or a GPU. If the parent is already gone it exits at once (status 137, as if killed); started
// through a wrapper (the spawner is alive but not its parent) it arms nothing.
constexpr const char* kParentPidEnv = "LOCKSTEP_PARENT_PID";
void die_with_parent();

struct ExitStatus {
  int code = 0;  // exit code, or 128 + signal
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;  // killed by us after the timeout
  std::string describe()
      const;  // "exit code 3", "killed by signal 9 (Killed)", "timed out after 600 s"
};

// Waits for the child; after timeout_s (> 0) it is killed (with its process group).
ExitStatus wait_for(const Child& c, double timeout_s = 0);

// The NVIDIA GPUs this process may use, found without CUDA: the entries of CUDA_VISIBLE_DEVICES
// when it is set, else one per device the kernel driver lists (/proc/driver/nvidia/gpus/*), as
// indices "0", "1", ... Empty on a machine without NVIDIA GPUs.
std::vector<std::string> visible_gpus();
std::vector<std::string> visible_gpus(const char* cuda_visible_devices,
                                      const std::filesystem::path& driver_gpus_dir);
// CUDA_VISIBLE_DEVICES for `slots` concurrent runs of `per_run` GPUs each, from `gpus`: slot w
// gets gpus[w*per_run, (w+1)*per_run). As many slots as the GPUs allow (at least none).
std::vector<std::vector<std::string>> gpu_slots(const std::vector<std::string>& gpus, int per_run);

}  // namespace lockstep::util
