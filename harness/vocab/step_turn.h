// Two timing runs that take turns step by step. `compare` starts a timing repeat pair (one
// baseline run, one variant run) at the same time and hands each one end of a socket pair as
// LOCKSTEP_TURN_FD; each run waits for the turn before a step and hands it over after, so the
// two arms' steps alternate within tens of milliseconds and share whatever the host is doing
// then (docs/method.md "Timing in turns"). Only the waiting is here: POSIX, no LibTorch.
#pragma once

#include <string>

namespace lockstep::train {

// A multi-rank timing run (harness/runs/child_run.h): its turn sockets, one per rank, as
// "3,4,..." and, when pinned, each rank's CPUs as "0;1" (rank 0 on CPU 0, rank 1 on CPU 1). Its
// launcher hands rank r its socket as fd 3 (LOCKSTEP_TURN_FD=3) and its CPUs.
constexpr const char* kTurnFdsEnv = "LOCKSTEP_TURN_FDS";
constexpr const char* kRankCpusEnv = "LOCKSTEP_RANK_CPUS";

class StepTurn {
 public:
  static constexpr const char* kEnv = "LOCKSTEP_TURN_FD";

  // From the environment: taking turns when LOCKSTEP_TURN_FD names an open socket (the variable
  // is then removed, so that what this run starts does not inherit it); otherwise inactive.
  // give_up_s: a peer silent for longer than this is left behind (see wait()).
  static StepTurn from_env(double give_up_s);

  StepTurn() = default;
  StepTurn(int fd, double give_up_s) : fd_(fd), give_up_s_(give_up_s) {}
  StepTurn(const StepTurn&) = delete;
  StepTurn& operator=(const StepTurn&) = delete;
  StepTurn(StepTurn&& o) noexcept;
  StepTurn& operator=(StepTurn&& o) noexcept;
  ~StepTurn() { close(); }

  bool active() const { return fd_ >= 0; }
  // Why turns stopped ("" while active or never started): "the peer finished", "the peer was
  // silent for 600 s", ...
  const std::string& ended() const { return ended_; }

  // Blocks until the peer hands over the turn; returns the milliseconds waited (0 when
  // inactive). A peer that has exited (end of file), errs, or stays silent for give_up_s ends the
  // turns: this run goes on alone, never blocked again.
  double wait();
  // Hands the turn to the peer (nothing when inactive; a peer that has gone ends the turns).
  void pass();
  // Gives up ownership of the socket (an external arm's relay takes it over); -1 when inactive.
  int release() { const int fd = fd_; fd_ = -1; return fd; }
  // After the last step: waits for the peer's step that follows this run's last (so this run's
  // teardown never overlaps a timed step of the peer), then closes.
  void finish();

 private:
  void close();
  void stop(const std::string& why);
  int fd_ = -1;
  double give_up_s_ = 600;
  std::string ended_;
};

}  // namespace lockstep::train
