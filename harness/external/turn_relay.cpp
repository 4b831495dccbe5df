#include "harness/external/turn_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "harness/util/clock.h"
#include "harness/vocab/step_turn.h"

namespace lockstep::external {

std::unique_ptr<TurnRelay> TurnRelay::from_env(double give_up_s) {
  auto turn = train::StepTurn::from_env(give_up_s);
  if (!turn.active()) return nullptr;
  return std::make_unique<TurnRelay>(turn.release(), give_up_s);
}

TurnRelay::TurnRelay(int peer_fd, double give_up_s) : peer_(peer_fd), give_up_s_(give_up_s) {
  ::fcntl(peer_, F_SETFD, FD_CLOEXEC);  // never inherited by the trainer
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("turn relay: ") + std::strerror(errno));
  relay_end_ = sv[0];
  // Above 10, so that dup2(trainer_end_, 3) in the trainer never meets itself.
  trainer_end_ = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
  ::close(sv[1]);
  thread_ = std::thread([this] { loop(); });
}

TurnRelay::~TurnRelay() {
  stop_ = true;
  if (wake_[1] >= 0) (void)!::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  for (int fd : {peer_, relay_end_, trainer_end_, wake_[0], wake_[1]})
    if (fd >= 0) ::close(fd);
}

void TurnRelay::trainer_started() {
  std::lock_guard<std::mutex> lock(mu_);
  if (trainer_end_ >= 0) ::close(trainer_end_);
  trainer_end_ = -1;
}

void TurnRelay::accept() {
  accepted_ = true;
  (void)!::write(wake_[1], "a", 1);
}

void TurnRelay::decline(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_.empty()) ended_ = why;
  }
  stop_ = true;
  (void)!::write(wake_[1], "x", 1);
}

void TurnRelay::finish_after_peer(double timeout_s) {
  last_turn_ = true;
  const int64_t until = util::steady_now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  while (ended().empty() && util::steady_now_ns() < until)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void TurnRelay::end(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_.empty()) ended_ = why;
}

std::string TurnRelay::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

int64_t TurnRelay::peer_wait_ns() const {
  const int64_t since = peer_wait_since_ns_.load();
  return peer_wait_total_ns_.load() + (since > 0 ? util::steady_now_ns() - since : 0);
}

double TurnRelay::held_s() const {
  const int64_t since = held_since_ns_.load();
  return since > 0 ? static_cast<double>(util::steady_now_ns() - since) / 1e9 : 0.0;
}

TurnRelay::Got TurnRelay::wait_byte(int fd, double give_up_s) {
  const int64_t t0 = util::steady_now_ns();
  for (;;) {
    if (stop_) return Got::Woken;
    const double left_ms = give_up_s * 1e3 - static_cast<double>(util::steady_now_ns() - t0) / 1e6;
    if (left_ms <= 0) return Got::Closed;
    pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int r = ::poll(p, 2, static_cast<int>(std::min(left_ms, 60000.0)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Got::Closed;
    if (p[1].revents) {  // accept() or a stop: drain, and stop only for a stop
      char buf[16];
      (void)!::read(wake_[0], buf, sizeof buf);
      if (stop_) return Got::Woken;
    }
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    char token = 0;
    const ssize_t n = ::recv(fd, &token, 1, 0);
    if (n == 1) return Got::Token;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return Got::Closed;
  }
}

bool TurnRelay::send_byte(int fd) {
  const char token = 't';
  for (;;) {
    const ssize_t n = ::send(fd, &token, 1, MSG_NOSIGNAL);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// The peer's turn, then the trainer's, until one side ends. Closing both ends on the way out
// tells the other side: end of file, it goes on alone.
void TurnRelay::loop() {
  for (;;) {
    peer_wait_since_ns_ = util::steady_now_ns();
    const Got from_peer = wait_byte(peer_, give_up_s_);
    peer_wait_total_ns_ += util::steady_now_ns() - peer_wait_since_ns_.exchange(0);
    if (from_peer != Got::Token) {
      end(from_peer == Got::Closed ? "the peer finished" : "stopped");
      break;
    }
    while (!accepted_ && !stop_) {  // the trainer has not announced turns yet: it is starting
      pollfd p{wake_[0], POLLIN, 0};
      if (::poll(&p, 1, 1000) > 0) {
        char buf[16];
        (void)!::read(wake_[0], buf, sizeof buf);
      }
    }
    if (stop_) {
      end("stopped");
      break;
    }
    if (last_turn_) {  // the peer's step after this run's last is done
      end("this run finished");
      break;
    }
    held_since_ns_ = util::steady_now_ns();  // before the byte: the trainer may answer at once
    if (!send_byte(relay_end_)) {
      held_since_ns_ = 0;
      end("the trainer closed its turn socket");
      break;
    }
    // The trainer may hold the turn as long as its step takes: the watchdog judges that.
    const Got from_trainer = wait_byte(relay_end_, 1e9);
    held_since_ns_ = 0;
    if (from_trainer != Got::Token) {
      end(from_trainer == Got::Closed ? "the trainer finished" : "stopped");
      break;
    }
    if (!send_byte(peer_)) {
      end("the peer finished");
      break;
    }
  }
  ::shutdown(peer_, SHUT_RDWR);  // the peer sees end of file now, whoever else holds the socket
  ::shutdown(relay_end_, SHUT_RDWR);
}

}  // namespace lockstep::external
