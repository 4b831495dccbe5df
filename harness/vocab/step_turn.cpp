#include "harness/vocab/step_turn.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace lockstep::train {

StepTurn StepTurn::from_env(double give_up_s) {
  const char* v = std::getenv(kEnv);
  if (!v) return StepTurn();
  char* end = nullptr;
  const long fd = std::strtol(v, &end, 10);
  ::unsetenv(kEnv);
  if (end == v || *end != '\0' || fd < 0 || fd > 1 << 20) return StepTurn();
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) != 0) return StepTurn();
  return StepTurn(static_cast<int>(fd), give_up_s);
}

StepTurn::StepTurn(StepTurn&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), give_up_s_(o.give_up_s_), ended_(std::move(o.ended_)) {}

StepTurn& StepTurn::operator=(StepTurn&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    give_up_s_ = o.give_up_s_;
    ended_ = std::move(o.ended_);
  }
  return *this;
}

void StepTurn::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StepTurn::stop(const std::string& why) {
  close();
  if (ended_.empty()) ended_ = why;
}

double StepTurn::wait() {
  if (fd_ < 0) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto waited_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  for (;;) {
    const double left_ms = 1000.0 * give_up_s_ - waited_ms();
    if (left_ms <= 0) {
      char why[64];
      std::snprintf(why, sizeof why, "the peer was silent for %g s", give_up_s_);
      stop(why);
      return waited_ms();
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min(left_ms, 60000.0)) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      stop(std::string("poll: ") + std::strerror(errno));
      return waited_ms();
    }
    if (r == 0) continue;
    char token = 0;
    const ssize_t n = ::recv(fd_, &token, 1, 0);
    if (n == 1) return waited_ms();
    if (n < 0 && errno == EINTR) continue;
    stop(n == 0 ? "the peer finished" : std::string("recv: ") + std::strerror(errno));
    return waited_ms();
  }
}

void StepTurn::pass() {
  if (fd_ < 0) return;
  const char token = 't';
  for (;;) {
    const ssize_t n = ::send(fd_, &token, 1, MSG_NOSIGNAL);
    if (n == 1) return;
    if (n < 0 && errno == EINTR) continue;
    stop(n < 0 && errno == EPIPE ? "the peer finished"
                                 : std::string("send: ") + std::strerror(errno));
    return;
  }
}

void StepTurn::finish() {
  wait();
  if (fd_ >= 0) stop("this run finished");
}

}  // namespace lockstep::train
