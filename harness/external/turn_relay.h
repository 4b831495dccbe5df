// Turns for an external arm (docs/protocol.md "Turns"). `compare` hands a timing run one end of a
// socket pair (LOCKSTEP_TURN_FD, harness/vocab/step_turn.h); for an external arm the run process
// keeps it and gives the trainer a socket of its own, relaying each turn between the two on a
// thread of its own (two wake-ups per turn, microseconds against a step of milliseconds). So
// the run knows at every moment who holds the turn:
//   - while it waits for the peer, its watchdog does not count the time against the trainer;
//   - a trainer that keeps the turn is named ("it has held the turn for 31 s");
//   - no turn reaches the trainer before its hello announced turns (accept()): its start-up is
//     never taken for holding the turn;
//   - a trainer that declines turns (its hello does not announce them), exits or dies ends the
//     turns: the peer goes on alone, never blocked by a trainer that is not taking part.
// Torch-free, POSIX.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace lockstep::external {

class TurnRelay {
 public:
  // From LOCKSTEP_TURN_FD (removed from this process's environment); nullptr without it.
  // give_up_s: a peer silent for longer than this is left behind.
  static std::unique_ptr<TurnRelay> from_env(double give_up_s);
  TurnRelay(int peer_fd, double give_up_s);
  ~TurnRelay();  // ends the turns (the peer goes on alone) and joins the thread
  TurnRelay(const TurnRelay&) = delete;
  TurnRelay& operator=(const TurnRelay&) = delete;

  // The trainer's end (close-on-exec here; the trainer inherits it as LOCKSTEP_TURN_FD).
  int trainer_fd() const { return trainer_end_; }
  // Once the trainer has started: closes this process's copy of the trainer's end, so that the
  // trainer's exit is seen as the end of its turns.
  void trainer_started();
  // The trainer announced turns: from now on the peer's turns go to it.
  void accept();
  // The trainer takes no turns: the peer goes on alone.
  void decline(const std::string& why);
  // This run stops its trainer early (a timing repeat's window is done): the turns end at the
  // peer's next step, so that the trainer's teardown never overlaps a timed step of the peer.
  // Returns once they have ended, or after timeout_s.
  void finish_after_peer(double timeout_s);

  // Nanoseconds spent waiting for the peer so far (the wait in progress included): the time the
  // trainer did not have the turn, which the watchdog does not count against it.
  int64_t peer_wait_ns() const;
  // Seconds the trainer has held the current turn (0 when it does not hold it).
  double held_s() const;
  // The step turns ended at, and why ("" while they go on).
  std::string ended() const;

 private:
  enum class Got { Token, Closed, Woken };
  Got wait_byte(int fd, double give_up_s);
  bool send_byte(int fd);
  void loop();
  void end(const std::string& why);

  int peer_ = -1, relay_end_ = -1, trainer_end_ = -1, wake_[2] = {-1, -1};
  double give_up_s_;
  std::atomic<bool> stop_{false}, accepted_{false}, last_turn_{false};
  std::atomic<int64_t> peer_wait_total_ns_{0}, peer_wait_since_ns_{0}, held_since_ns_{0};
  mutable std::mutex mu_;
  std::string ended_;
  std::thread thread_;
};

}  // namespace lockstep::external
