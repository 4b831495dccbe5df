#include "harness/runs/child_run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>

#include "harness/util/exit_codes.h"
#include "harness/runs/run_folder.h"
#include "harness/vocab/step_turn.h"

namespace lockstep::runs {
namespace fs = std::filesystem;

namespace {

// What the run folder says about a child that exited with `st`.
RunOutcome read_outcome(const RunJob& job, const RunFolder& folder, const util::ExitStatus& st) {
  RunOutcome o;
  o.exit = st;
  if (!job.probe_from.empty()) {  // a probe writes no summary: its probe.json is the outcome
    if (st.code == 0 && fs::exists(job.dir / "probe.json")) return o;
    o.status = st.code == kExitUsage ? RunStatus::ConfigError : RunStatus::Crashed;
    if (st.code == 0) o.status = RunStatus::NoProbe;
    o.failure = st.describe() + ": " + folder.last_log_line();
    return o;
  }
  if (fs::exists(folder.summary())) {
    try {
      o.summary = read_summary(folder.summary());
      o.has_summary = true;
      o.status = o.summary.status;
      o.failure = o.summary.failure;
      o.failed_step = o.summary.failed_step;
    } catch (const std::exception& e) {
      o.status = RunStatus::UnreadableSummary;
      o.failure = e.what();
    }
  } else if (st.code == 0) {
    o.status = RunStatus::NoSummary;
    o.failure = "the run exited 0 but wrote no summary.json";
  }
  if (fs::exists(folder.metrics())) {
    try {
      o.records = read_metrics(folder.metrics());
    } catch (const std::exception& e) {
      if (o.ok()) o.status = RunStatus::UnreadableMetrics, o.failure = e.what();
    }
  }
  if (st.code != 0 && o.ok()) {
    o.status = st.code == kExitUsage ? RunStatus::ConfigError : RunStatus::Crashed;
    o.failure = st.describe() + ": " + folder.last_log_line();
  }
  return o;
}

// The folder belongs to this job: a previous run's summary.json must never stand in for this
// one's (and `lockstep run` refuses a folder that already holds a run).
void prepare(const RunJob& job) {
  fs::remove_all(job.dir);
  fs::create_directories(job.dir);
}

RunOutcome could_not_start(const std::string& why) {
  RunOutcome o;
  o.exit.code = 127;
  o.status = RunStatus::CouldNotStart;
  o.failure = why;
  return o;
}

RunOutcome wait_and_read(const RunJob& job, const std::vector<std::string>& env = {}) {
  const RunFolder folder(job.dir);
  util::ExitStatus st;
  try {
    st = util::wait_for(util::spawn(child_argv(job), folder.log(), job.label, env),
                        kChildRunTimeoutS);
  } catch (const std::exception& e) {
    return could_not_start(e.what());
  }
  return read_outcome(job, folder, st);
}

}  // namespace

std::vector<std::string> child_argv(const RunJob& job) {
  std::vector<std::string> a{util::self_exe(), "run", job.config};
  if (job.nproc > 0) a.push_back("--nproc"), a.push_back(std::to_string(job.nproc));
  for (const auto& s : job.sets) a.push_back("--set"), a.push_back(s);
  if (job.stop_after > 0) a.push_back("--stop-after"), a.push_back(std::to_string(job.stop_after));
  if (!job.probe_from.empty()) a.push_back("--probe"), a.push_back(job.probe_from.string());
  a.insert(a.end(), {"--out", job.dir.string(), "--quiet", "--no-history"});
  return a;
}

RunOutcome run_child(const RunJob& job) {
  prepare(job);
  return wait_and_read(job);
}

namespace {

// Multi-rank turns, arm by arm: all ranks of one arm take step k together (their collectives need
// each other), then all ranks of the other. Rank r's turn socket leads to this coordinator, which
// hands the turn to every live rank of an arm and takes it back from each before the other arm's
// ranks get theirs. A rank whose socket closes (it finished, or died) leaves the turns; an arm
// with no live rank left lets the other go on alone. A rank that holds the turn for give_up_s is
// left behind (its socket is closed: it goes on alone, as a silent peer's run does).
void coordinate_arms(std::vector<int> arm_a, std::vector<int> arm_b, double give_up_s) {
  std::vector<int>* arms[2] = {&arm_a, &arm_b};
  auto drop = [](int& fd) {
    if (fd >= 0) ::close(fd), fd = -1;
  };
  auto alive = [](const std::vector<int>& arm) {
    return std::any_of(arm.begin(), arm.end(), [](int fd) { return fd >= 0; });
  };
  int turn = 0;
  while (alive(arm_a) || alive(arm_b)) {
    std::vector<int>& arm = *arms[turn];
    if (alive(arm)) {
      const char token = 't';
      for (int& fd : arm)
        if (fd >= 0 && ::send(fd, &token, 1, MSG_NOSIGNAL) != 1) drop(fd);
      const auto t0 = std::chrono::steady_clock::now();
      for (int& fd : arm) {
        while (fd >= 0) {
          const double left_ms =
              1000.0 * give_up_s -
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          if (left_ms <= 0) {
            drop(fd);
            break;
          }
          pollfd p{fd, POLLIN, 0};
          const int r = ::poll(&p, 1, static_cast<int>(std::min(left_ms, 60000.0)) + 1);
          if (r < 0 && errno == EINTR) continue;
          if (r == 0) continue;
          char got = 0;
          const ssize_t n = r > 0 ? ::recv(fd, &got, 1, 0) : -1;
          if (n < 0 && errno == EINTR) continue;
          if (n != 1) drop(fd);
          break;
        }
      }
    }
    turn = 1 - turn;
  }
}

}  // namespace

std::pair<RunOutcome, RunOutcome> run_children_in_turns(const RunJob& first, const RunJob& second,
                                                         const std::vector<std::vector<int>>& rank_cpus,
                                                         int ranks) {
  prepare(first);
  prepare(second);
  ranks = std::max(1, ranks);
  // One rank: a socket pair between the two runs. R ranks: per arm and rank a socket pair to the
  // coordinator ([0] ours, [1] the rank's).
  const size_t pairs = ranks == 1 ? 1 : 2 * static_cast<size_t>(ranks);
  std::vector<std::array<int, 2>> sv(pairs, {-1, -1});
  auto close_all = [&] {
    for (auto& p : sv)
      for (int& fd : p)
        if (fd >= 0) ::close(fd), fd = -1;
  };
  for (auto& p : sv) {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.data()) != 0) {  // no turns
      close_all();
      return {run_child(first), run_child(second)};
    }
    for (int& fd : p)  // above 3 + ranks, so that dup2(fd, 3 + r) in the child never meets itself
      if (const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 16 + ranks); high >= 0) ::close(fd), fd = high;
  }
  if (ranks == 1) {
    const char token = 't';
    (void)!::send(sv[0][1], &token, 1, MSG_NOSIGNAL);  // the first turn is first's (waiting at [0])
  }
  // The child end of job k's rank r.
  auto child_end = [&](int k, int r) {
    return ranks == 1 ? sv[0][k] : sv[static_cast<size_t>(k * ranks + r)][1];
  };
  std::vector<std::string> env;
  if (ranks == 1) {
    env.push_back(std::string(train::StepTurn::kEnv) + "=3");
  } else {
    std::string fds, cpus;
    for (int r = 0; r < ranks; ++r) {
      fds += (r ? "," : "") + std::to_string(3 + r);
      if (!rank_cpus.empty()) {
        std::string list;
        for (int c : rank_cpus[static_cast<size_t>(r) % rank_cpus.size()])
          list += (list.empty() ? "" : ",") + std::to_string(c);
        cpus += (r ? ";" : "") + list;
      }
    }
    env.push_back(std::string(train::kTurnFdsEnv) + "=" + fds);
    if (!cpus.empty()) env.push_back(std::string(train::kRankCpusEnv) + "=" + cpus);
  }
  std::optional<util::Child> children[2];
  std::string failed[2];
  const RunJob* jobs[2] = {&first, &second};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::pair<int, int>> fds;
    for (int r = 0; r < ranks; ++r) fds.emplace_back(child_end(k, r), 3 + r);
    try {
      children[k] = util::spawn(child_argv(*jobs[k]), RunFolder(jobs[k]->dir).log(),
                                jobs[k]->label, env, fds);
      // posix_spawn returns once the child has exec'd: no thread of it exists yet, so every
      // thread it starts (LibTorch's pool included) inherits the pin. Ranks pin themselves
      // (their launcher, before exec).
      if (ranks == 1 && !rank_cpus.empty()) util::pin_to_cpus(children[k]->pid, rank_cpus[0]);
    } catch (const std::exception& e) {
      failed[k] = e.what();
    }
  }
  std::thread coordinator;
  if (ranks > 1) {
    std::vector<int> ends[2];
    for (int k = 0; k < 2; ++k)
      for (int r = 0; r < ranks; ++r) {
        int& ours = sv[static_cast<size_t>(k * ranks + r)][0];
        ends[k].push_back(children[k] ? ours : -1);  // a job that never started takes no turns
        if (!children[k]) ::close(ours);
        ours = -1;  // the coordinator owns it now
      }
    coordinator = std::thread(coordinate_arms, ends[0], ends[1], kTurnGiveUpS);
  }
  close_all();  // the children hold the only ends: one's exit is the other's end of file
  RunOutcome out[2];
  for (int k = 0; k < 2; ++k)
    out[k] = !children[k] ? could_not_start(failed[k])
                          : read_outcome(*jobs[k], RunFolder(jobs[k]->dir),
                                         util::wait_for(*children[k], kChildRunTimeoutS));
  if (coordinator.joinable()) coordinator.join();  // every rank has exited: every socket closed
  return {out[0], out[1]};
}

std::vector<RunOutcome> run_children(const std::vector<RunJob>& jobs, int parallel,
                                     const std::vector<std::vector<std::string>>& slot_env) {
  for (const auto& j : jobs) prepare(j);
  std::vector<RunOutcome> out(jobs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> workers;
  const int slots = slot_env.empty() ? std::max(1, parallel) : static_cast<int>(slot_env.size());
  const size_t n = std::min(jobs.size(), static_cast<size_t>(slots));
  for (size_t w = 0; w < n; ++w)
    workers.emplace_back([&, w] {
      const std::vector<std::string> no_env;
      const auto& env = slot_env.empty() ? no_env : slot_env[w];
      for (size_t i; (i = next.fetch_add(1)) < jobs.size();) out[i] = wait_and_read(jobs[i], env);
    });
  for (auto& t : workers) t.join();
  return out;
}

}  // namespace lockstep::runs
