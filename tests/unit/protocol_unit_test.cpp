// The trainer protocol 2 without a trainer process (docs/protocol.md): the hello line, what the
// run summary keeps of it, and the turn relay between a peer and a trainer over real socket
// pairs: turns pass through in order, the peer's waiting is counted apart, a trainer that keeps
// the turn is seen holding it, and a trainer or peer that goes away ends the turns for the other.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "harness/external/metrics_reader.h"
#include "harness/external/turn_relay.h"
#include "harness/vocab/trainer_protocol.h"

namespace lockstep::external {
namespace {

TEST(Hello, AloneOrOnTheFirstStepLine) {
  bool only = false;
  auto h = parse_hello(R"({"lockstep": {"protocol": 2, "supports": ["probe", "turns"]}})", 1, &only);
  ASSERT_TRUE(h);
  EXPECT_TRUE(only);
  EXPECT_EQ(h->version, 2);
  EXPECT_EQ(h->supports_text(), "turns,probe");  // in the protocol's order, whatever the trainer's
  EXPECT_FALSE(h->has(Capability::Noise));
  ASSERT_EQ(h->lacks().size(), 1u);
  EXPECT_EQ(h->lacks()[0], Capability::Noise);

  h = parse_hello(R"({"step": 1, "loss": 2.5, "step_ms": 1, "tokens": 4,
                      "lockstep": {"protocol": 2, "supports": ["noise", "warp_drive"]}})",
                  1, &only);
  ASSERT_TRUE(h);
  EXPECT_FALSE(only);                         // a step line that carries the hello
  EXPECT_EQ(h->supports_text(), "noise");     // an unknown name is ignored
  EXPECT_FALSE(parse_hello(R"({"step": 1, "loss": 2.5, "step_ms": 1, "tokens": 4})", 1, &only));
  EXPECT_FALSE(parse_hello("not json", 1, &only));  // the step parser names that
  h = parse_hello(R"({"lockstep": {"protocol": 1, "supports": ["turns"]}})", 1, &only);
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->supports.empty());  // protocol 1 is metrics only, whatever it lists
}

TEST(Hello, MalformedNamesTheLine) {
  bool only = false;
  for (const char* bad : {R"({"lockstep": 2})", R"({"lockstep": {"protocol": "2"}})",
                          R"({"lockstep": {"protocol": 0}})",
                          R"({"lockstep": {"protocol": 2, "supports": "turns"}})",
                          R"({"lockstep": {"protocol": 2, "supports": [1]}})"}) {
    try {
      parse_hello(bad, 7, &only);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("line 7: \"lockstep\"", 0), 0u) << e.what();
    }
  }
}

// The trainer declares its numerics: "compute" in the hello, "observed_compute" on a step line;
// a name that is not a precision names the line.
TEST(Hello, TheComputeDtypeIsReadAndChecked) {
  bool only = false;
  auto h = parse_hello(R"({"lockstep": {"protocol": 2, "supports": [], "compute": "bf16"}})", 1, &only);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->compute, "bf16");
  h = parse_hello(R"({"lockstep": {"protocol": 2}})", 1, &only);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->compute, "");
  for (const char* bad : {R"({"lockstep": {"protocol": 2, "compute": "bf8"}})",
                          R"({"lockstep": {"protocol": 2, "compute": 16}})"}) {
    try {
      parse_hello(bad, 1, &only);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("line 1: \"lockstep\".\"compute\" must be one of fp32, tf32, bf16, fp16", 0), 0u)
          << e.what();
    }
  }
  const auto s = parse_step_line(R"({"step": 1, "loss": 2.5, "step_ms": 1, "tokens": 4, "observed_compute": "fp16"})", 3, 0);
  EXPECT_EQ(s.observed_compute, "fp16");
  EXPECT_EQ(parse_step_line(R"({"step": 1, "loss": 2.5, "step_ms": 1, "tokens": 4})", 3, 0).observed_compute, "");
  EXPECT_THROW(parse_step_line(R"({"step": 1, "loss": 2.5, "step_ms": 1, "tokens": 4, "observed_compute": "half"})", 3, 0),
               std::runtime_error);
}

TEST(Hello, TheSummaryKeepsWhatWasAnnounced) {
  TrainerProtocol p;
  p.version = 2;
  p.supports = {Capability::Turns, Capability::Probe};
  std::map<std::string, std::string> env{{"trainer", "external"}};
  p.to_env(env);
  EXPECT_EQ(env["trainer_protocol"], "2");
  EXPECT_EQ(env["trainer_supports"], "turns,probe");
  EXPECT_EQ(env.count("trainer_compute"), 0u);  // not said: not written (old summaries unchanged)
  p.compute = "bf16";
  p.observed_compute = "fp16";
  p.to_env(env);
  const auto back = TrainerProtocol::from_env(env);
  EXPECT_EQ(back.compute, "bf16");
  EXPECT_EQ(back.observed_compute, "fp16");
  EXPECT_EQ(back.version, 2);
  EXPECT_EQ(back.supports_text(), "turns,probe");
  EXPECT_TRUE(back.external);
  // An external run recorded before protocol 2: protocol 1. Lockstep's own trainer: everything.
  EXPECT_EQ(TrainerProtocol::from_env({{"trainer", "external"}}).version, 1);
  EXPECT_TRUE(TrainerProtocol::from_env({}).lacks().empty());
  EXPECT_FALSE(TrainerProtocol::from_env({}).external);
}

// One byte with a deadline: 't', or 0 when nothing came, or -1 at end of file.
int read_byte(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return 0;
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 1 ? c : -1;
}

struct Pair {
  int a = -1, b = -1;
  Pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a = sv[0], b = sv[1];
  }
  ~Pair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
};

TEST(TurnRelay, PassesTurnsBothWaysAndCountsThePeersTimeApart) {
  Pair peer;  // peer.a: the compare's peer run; peer.b: this run's end, owned by the relay
  TurnRelay relay(peer.b, 60);
  peer.b = -1;
  const int trainer = relay.trainer_fd();
  // No turn before the trainer's hello announced turns: its start-up is not holding the turn.
  ASSERT_EQ(::send(peer.a, "t", 1, MSG_NOSIGNAL), 1);
  EXPECT_EQ(read_byte(trainer, 300), 0);
  EXPECT_EQ(relay.held_s(), 0.0);
  relay.accept();
  ASSERT_EQ(read_byte(trainer, 5000), 't');
  ASSERT_EQ(::send(trainer, "t", 1, MSG_NOSIGNAL), 1);
  ASSERT_EQ(read_byte(peer.a, 5000), 't');
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(read_byte(trainer, 100), 0) << "the trainer got a turn the peer never gave";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the peer's step
    ASSERT_EQ(::send(peer.a, "t", 1, MSG_NOSIGNAL), 1);
    ASSERT_EQ(read_byte(trainer, 5000), 't') << "turn " << k;
    EXPECT_EQ(relay.held_s() > 0, true);
    EXPECT_EQ(read_byte(peer.a, 100), 0) << "the peer got the turn back before the trainer's step";
    ASSERT_EQ(::send(trainer, "t", 1, MSG_NOSIGNAL), 1);
    ASSERT_EQ(read_byte(peer.a, 5000), 't') << "turn " << k;
  }
  // Three waits for the peer of >= 150 ms (100 ms reads + 50 ms steps each) were counted.
  EXPECT_GE(relay.peer_wait_ns(), 3 * 150'000'000LL);
  EXPECT_EQ(relay.held_s(), 0.0);
  EXPECT_EQ(relay.ended(), "");
}

TEST(TurnRelay, ATrainerThatKeepsTheTurnIsSeenHoldingIt) {
  Pair peer;
  TurnRelay relay(peer.b, 60);
  peer.b = -1;
  relay.accept();
  ASSERT_EQ(::send(peer.a, "t", 1, MSG_NOSIGNAL), 1);
  ASSERT_EQ(read_byte(relay.trainer_fd(), 5000), 't');
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(relay.held_s(), 0.25);
}

TEST(TurnRelay, ATrainerThatGoesAwayEndsThePeersTurns) {
  Pair peer;
  auto relay = std::make_unique<TurnRelay>(peer.b, 60);
  peer.b = -1;
  relay->accept();
  ASSERT_EQ(::send(peer.a, "t", 1, MSG_NOSIGNAL), 1);
  ASSERT_EQ(read_byte(relay->trainer_fd(), 5000), 't');
  relay->trainer_started();  // closes the only copy of the trainer's end: as if it died holding the turn
  EXPECT_EQ(read_byte(peer.a, 5000), -1);  // end of file: the peer goes on alone
  EXPECT_EQ(relay->ended(), "the trainer finished");
}

TEST(TurnRelay, DecliningOrAPeerThatGoesAwayEndsTheTrainersTurns) {
  {
    Pair peer;
    TurnRelay relay(peer.b, 60);
    peer.b = -1;
    const int trainer = ::dup(relay.trainer_fd());
    relay.trainer_started();
    relay.decline("the trainer does not announce turns (protocol 1)");
    EXPECT_EQ(read_byte(peer.a, 5000), -1);  // the peer goes on alone at once
    EXPECT_EQ(read_byte(trainer, 5000), -1);
    EXPECT_EQ(relay.ended(), "the trainer does not announce turns (protocol 1)");
    ::close(trainer);
  }
  {
    Pair peer;
    TurnRelay relay(peer.b, 60);
    peer.b = -1;
    const int trainer = ::dup(relay.trainer_fd());
    relay.trainer_started();
    ::close(peer.a);  // the peer finished
    peer.a = -1;
    EXPECT_EQ(read_byte(trainer, 5000), -1);  // the trainer's next wait ends: it goes on alone
    EXPECT_EQ(relay.ended(), "the peer finished");
    ::close(trainer);
  }
}

}  // namespace
}  // namespace lockstep::external
