// harness/vocab/step_turn.h: two runs taking turns over a socket pair. Real sockets, real
// threads; the order of the steps is the assertion, never their timing.
#include "harness/vocab/step_turn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using lockstep::train::StepTurn;

namespace {

// A socket pair with the first turn already at end 0 (as compare hands it out).
std::pair<int, int> turn_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const char token = 't';
  EXPECT_EQ(::send(sv[1], &token, 1, MSG_NOSIGNAL), 1);
  return {sv[0], sv[1]};
}

}  // namespace

TEST(StepTurn, TwoRunsAlternateStepByStepAndTheFirstTurnIsFirsts) {
  auto [a, b] = turn_pair();
  std::mutex mu;
  std::string order;
  auto run = [&](int fd, char who, int steps) {
    StepTurn turn(fd, 60);
    for (int i = 0; i < steps; ++i) {
      turn.wait();
      {
        std::lock_guard<std::mutex> lock(mu);
        order += who;
      }
      std::this_thread::yield();
      turn.pass();
    }
    turn.finish();
  };
  std::thread second(run, b, 'B', 50);  // started first: it must still wait for A's step
  std::thread first(run, a, 'A', 50);
  first.join();
  second.join();
  std::string want;
  for (int i = 0; i < 50; ++i) want += "AB";
  EXPECT_EQ(order, want);
}

TEST(StepTurn, APeerThatFinishesEndsTheTurnsAndTheOtherRunGoesOnAlone) {
  auto [a, b] = turn_pair();
  StepTurn first(a, 60);
  {
    StepTurn second(b, 60);
    first.wait();  // the first turn
    first.pass();
    second.wait();
  }  // second's run ends (its process exits): its end of the pair closes
  first.wait();
  EXPECT_FALSE(first.active());
  EXPECT_EQ(first.ended(), "the peer finished");
  EXPECT_EQ(first.wait(), 0.0);  // inactive: never blocks again
  first.pass();                  // and handing over to nobody is no error (no SIGPIPE)
  first.finish();
  EXPECT_EQ(first.ended(), "the peer finished");
}

TEST(StepTurn, ASilentPeerIsLeftBehindAfterTheLimit) {
  auto [a, b] = turn_pair();
  StepTurn first(a, 0.2);
  first.wait();
  first.pass();
  const double waited = first.wait();  // b never answers
  EXPECT_FALSE(first.active());
  EXPECT_EQ(first.ended(), "the peer was silent for 0.2 s");
  EXPECT_GE(waited, 150.0);
  ::close(b);
}

TEST(StepTurn, FromEnvTakesASocketAndRemovesTheVariable) {
  auto [a, b] = turn_pair();
  ::setenv(StepTurn::kEnv, std::to_string(a).c_str(), 1);
  StepTurn t = StepTurn::from_env(60);
  EXPECT_TRUE(t.active());
  EXPECT_EQ(std::getenv(StepTurn::kEnv), nullptr);  // not inherited by what the run starts
  ::close(b);

  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  for (const std::string& v : {std::to_string(p[0]), std::string("3x"), std::string(""),
                              std::string("-1"), std::string("999999")}) {
    ::setenv(StepTurn::kEnv, v.c_str(), 1);
    EXPECT_FALSE(StepTurn::from_env(60).active()) << "'" << v << "'";  // not a socket: no turns
  }
  ::unsetenv(StepTurn::kEnv);
  EXPECT_FALSE(StepTurn::from_env(60).active());
  ::close(p[0]);
  ::close(p[1]);
}
