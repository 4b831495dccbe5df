// Unit tests for harness/external without a process: the placeholders, the metrics protocol line
// by line (every way a line can be wrong names its line number and what is wrong), the reader of
// a growing file, and the [external] section (string lists, the env table, its config errors).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "harness/config/config.h"
#include "harness/external/external_config.h"
#include "harness/external/metrics_reader.h"
#include "harness/external/placeholders.h"
#include "harness/external/trainer_process.h"

namespace lockstep::external {
namespace {
namespace fs = std::filesystem;

TEST(Placeholders, ExpandKnownNamesAndLiteralBraces) {
  const std::map<std::string, std::string> v{
      {"seed", "7"}, {"steps", "30"}, {"metrics", "/r/external/metrics.jsonl"}, {"out", "/r"}};
  EXPECT_EQ(expand("--seed={seed}", v), "--seed=7");
  EXPECT_EQ(expand("{out}/ckpt-{steps}", v), "/r/ckpt-30");
  EXPECT_EQ(expand("{metrics}", v), "/r/external/metrics.jsonl");
  EXPECT_EQ(expand("{{\"a\": {seed}}}", v), "{\"a\": 7}");
  EXPECT_EQ(expand("plain", v), "plain");
  EXPECT_FALSE(placeholder_error("{{literal}} {seed}"));
}

TEST(Placeholders, UnknownOrUnbalancedIsAnError) {
  auto e = placeholder_error("--seed={sed}");
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("unknown placeholder {sed} (did you mean {seed}?)"), std::string::npos) << *e;
  EXPECT_NE(e->find("known: {seed} {steps} {metrics} {out}"), std::string::npos) << *e;
  ASSERT_TRUE(placeholder_error("{seed"));
  EXPECT_NE(placeholder_error("{seed")->find("unclosed \"{\""), std::string::npos);
  ASSERT_TRUE(placeholder_error("a}b"));
  EXPECT_NE(placeholder_error("a}b")->find("unmatched \"}\""), std::string::npos);
}

// --- the metrics protocol ------------------------------------------------------------------------

std::string ErrorOf(const std::string& line, int64_t line_no = 5, int64_t prev = 4) {
  try {
    parse_step_line(line, line_no, prev);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << line;
  return "";
}

TEST(MetricsProtocol, RequiredFieldsAndOptionalOnes) {
  auto s = parse_step_line(
      R"({"step": 1, "loss": 2.5, "step_ms": 10.0, "tokens": 512, "grad_norm": 0.5, "lr": 0.001,
          "forward_ms": 4.0, "backward_ms": 5.0, "peak_memory_bytes": 123456, "extra": [1, 2]})",
      1, 0);
  EXPECT_EQ(s.record.step, 1);
  EXPECT_EQ(s.record.loss, 2.5);
  EXPECT_EQ(s.record.step_ms, 10.0);
  EXPECT_EQ(s.record.tokens, 512);
  EXPECT_EQ(s.record.grad_norm, 0.5);
  EXPECT_EQ(s.record.lr, 0.001);
  EXPECT_EQ(s.record.phase_ms.at("forward"), 4.0);
  EXPECT_EQ(s.record.phase_ms.at("backward"), 5.0);
  EXPECT_EQ(s.record.phase_ms.at("other"), 1.0);  // the rest of the step
  EXPECT_EQ(s.peak_memory_bytes, 123456);
  EXPECT_FALSE(s.record.timed);  // the runner decides (warmup)

  auto minimal = parse_step_line(R"({"step": 3, "loss": 1, "step_ms": 2, "tokens": 8})", 3, 2);
  EXPECT_TRUE(std::isnan(minimal.record.grad_norm));  // unknown, not 0
  EXPECT_TRUE(minimal.record.phase_ms.empty());
  EXPECT_FALSE(minimal.peak_memory_bytes);
  auto nonfinite = parse_step_line(R"({"step": 5, "loss": null, "step_ms": 2, "tokens": 8})", 5, 4);
  EXPECT_TRUE(std::isnan(nonfinite.record.loss));
}

// JSON numbers round-trip exactly: the shortest form that reads back as the same double, both
// ways (Python's json.dumps writes repr(), nlohmann parses to the nearest double).
TEST(MetricsProtocol, NumbersAreLossless) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-20, 20);
  for (int i = 0; i < 2000; ++i) {
    const double x = std::exp(u(rng)) * (i % 2 ? 1 : -1);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", x);
    auto s = parse_step_line(std::string(R"({"step": 1, "step_ms": 1, "tokens": 1, "loss": )") +
                                 buf + "}",
                             1, 0);
    ASSERT_EQ(s.record.loss, x) << buf;
  }
  auto s = parse_step_line(R"({"step": 1, "step_ms": 1, "tokens": 1, "loss": 0.1})", 1, 0);
  EXPECT_EQ(s.record.loss, 0.1);
}

TEST(MetricsProtocol, EachBadLineNamesItsNumberAndWhatIsWrong) {
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": 1.0, "step_ms": 2)").find("line 5: not JSON"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": NaN, "step_ms": 2, "tokens": 8})")
                .find("NaN and Infinity are not JSON: write null"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[1, 2]").find("line 5: expected a JSON object, got array"), std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": 1.0, "tokens": 8})")
                .find("line 5: missing required field \"step_ms\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"loss": 1.0, "step_ms": 2, "tokens": 8})")
                .find("missing required field \"step\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 7, "loss": 1.0, "step_ms": 2, "tokens": 8})")
                .find("line 5: step 7 after step 4: steps must come in order"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 2, "loss": 1.0, "step_ms": 2, "tokens": 8})", 1, 0)
                .find("line 1: step 2 first"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": "1.0", "step_ms": 2, "tokens": 8})")
                .find("\"loss\" must be a number or null, got \"1.0\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": 1.0, "step_ms": 2, "tokens": 8.5})")
                .find("\"tokens\" must be a non-negative integer, got 8.5"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": 1.0, "step_ms": -1, "tokens": 8})")
                .find("\"step_ms\" must be >= 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf(R"({"step": 5, "loss": 1.0, "step_ms": 1, "tokens": 8, "forward_ms": "x"})")
                .find("\"forward_ms\" must be a number"),
            std::string::npos);
}

class TempFile {
 public:
  TempFile() : path_(fs::temp_directory_path() / ("lockstep-ext-" + std::to_string(std::random_device{}()))) {}
  ~TempFile() { fs::remove(path_); }
  const fs::path& path() const { return path_; }
  void append(const std::string& s) {
    std::ofstream(path_, std::ios::app | std::ios::binary) << s;
  }

 private:
  fs::path path_;
};

TEST(MetricsTail, ReadsWholeLinesAsTheFileGrows) {
  TempFile f;
  MetricsTail tail(f.path());
  EXPECT_FALSE(tail.exists());
  EXPECT_TRUE(tail.read_new().empty());
  f.append("a\nb");
  auto lines = tail.read_new();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_EQ(lines[0].number, 1);
  f.append("c\n\nd\r\n");  // "bc" completed, an empty line skipped (but counted), CRLF
  lines = tail.read_new();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "bc");
  EXPECT_EQ(lines[1].text, "d");
  EXPECT_EQ(lines[1].number, 4);
  f.append("e");  // no newline yet: waits, unless the writer is done
  EXPECT_TRUE(tail.read_new().empty());
  lines = tail.read_new(/*at_end=*/true);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "e");
  EXPECT_EQ(lines[0].number, 5);
}

TEST(TrainerProcess, FindsProgramsLikeAShell) {
  EXPECT_TRUE(find_program("sh", "/"));
  EXPECT_FALSE(find_program("lockstep-no-such-program-x", "/"));
  EXPECT_EQ(find_program("./sh", "/bin").value_or(""), "/bin/sh");
  EXPECT_FALSE(find_program("./sh", "/"));
  try {
    TrainerProcess p({"lockstep-no-such-program-x"}, {}, "/", "/dev/null");
    ADD_FAILURE() << "started";
  } catch (const StartError& e) {
    EXPECT_NE(std::string(e.what()).find("command not found: \"lockstep-no-such-program-x\""),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainerProcess, StopEndsTheWholeGroupAndReportsTheSignal) {
  TempFile log;
  // A shell whose child would outlive a plain kill of the shell.
  TrainerProcess p({"sh", "-c", "sleep 300 & echo started; wait"}, {{"X", "1"}}, "/", log.path());
  EXPECT_FALSE(p.poll());
  const auto st = p.stop(5);
  EXPECT_TRUE(st.signaled);
  EXPECT_EQ(st.signal, SIGTERM);
}

// --- the [external] section ----------------------------------------------------------------------

std::string ConfigErrorOf(const std::string& text) {
  try {
    config::Config::parse(text, "/cfg/ext.toml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << text;
  return "";
}

TEST(ExternalSection, ParsesListsAndTablesAndResolvesTheWorkdir) {
  auto c = config::Config::parse(
      "[external]\ncommand = [\"python3\", \"train.py\", \"--seed\", \"{seed}\"]\n"
      "env = { B = \"2\", A = \"x y {steps}\" }\nflops_per_token = 1e6\n",
      "/cfg/sub/ext.toml");
  EXPECT_TRUE(is_external(c));
  auto e = ExternalConfig::from(c);
  EXPECT_EQ(e.command, (std::vector<std::string>{"python3", "train.py", "--seed", "{seed}"}));
  EXPECT_EQ(e.env, (std::map<std::string, std::string>{{"A", "x y {steps}"}, {"B", "2"}}));
  EXPECT_EQ(e.workdir, "/cfg/sub");  // the folder of the file that sets command
  EXPECT_EQ(e.flops_per_token, 1e6);
  EXPECT_EQ(e.timeout_s, 0);
  // The effective config is TOML that loads back to the same values (run folders, --set).
  const std::string toml = c.to_toml();
  EXPECT_NE(toml.find("command = [\"python3\", \"train.py\", \"--seed\", \"{seed}\"]"),
            std::string::npos)
      << toml;
  EXPECT_NE(toml.find("env = { A = \"x y {steps}\", B = \"2\" }"), std::string::npos) << toml;
  auto again = config::Config::parse(toml, "/elsewhere/config.toml");
  EXPECT_EQ(again.hash(), c.hash());
  EXPECT_TRUE(config::diff(c, again).empty());

  auto w = config::Config::parse("[external]\ncommand = [\"t\"]\nworkdir = \"../trainer\"\n",
                                 "/cfg/sub/ext.toml");
  EXPECT_EQ(w.str("external.workdir"), "/cfg/trainer");
  EXPECT_EQ(c.integer("profile.window"), 0);  // Lockstep profiles only its own trainer
  auto builtin = config::Config::parse("[run]\nsteps = 10\n[profile]\nwindow = 2\n", "/cfg/b.toml");
  EXPECT_FALSE(is_external(builtin));
  EXPECT_FALSE(builtin.has_value("external.workdir"));
}

TEST(ExternalSection, ConfigProblemsAreOneLineErrorsAtTheKey) {
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = [\"t\", \"{sed}\"]\n"),
            "/cfg/ext.toml:2:1: external.command: unknown placeholder {sed} (did you mean "
            "{seed}?); known: {seed} {steps} {metrics} {out} ({{ and }} for literal braces)");
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = \"python3 train.py\"\n"),
            "/cfg/ext.toml:2:1: external.command: expected an array of strings, got string");
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = [\"t\", 3]\n"),
            "/cfg/ext.toml:2:1: external.command: element 2: expected a string, got integer");
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = [\"t\"]\nenv = { N = 3 }\n"),
            "/cfg/ext.toml:3:9: external.env.N: expected a string, got integer");
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = [\"t\"]\nenv = { \"A-B\" = \"1\" }\n"),
            "/cfg/ext.toml:3:1: external.env: \"A-B\" is not an environment variable name");
  EXPECT_EQ(ConfigErrorOf("[external]\ncommand = [\"t\"]\nenv = { LOCKSTEP_SEED = \"1\" }\n"),
            "/cfg/ext.toml:3:1: external.env: LOCKSTEP_SEED is set by Lockstep itself");
  EXPECT_EQ(ConfigErrorOf("[external]\nenv = { A = \"1\" }\n"),
            "/cfg/ext.toml:2:1: external.env: external.env is set but external.command is empty "
            "(no external trainer)");
  EXPECT_EQ(ConfigErrorOf("[parallel]\nworld_size = 2\n[external]\ncommand = [\"t\"]\n"),
            "/cfg/ext.toml:2:1: parallel.world_size: an external trainer is one process (it "
            "starts its own ranks if it has any): world_size must be 1, got 2");
  EXPECT_EQ(ConfigErrorOf("[gate]\nalignment = \"exactly\"\n"),
            "/cfg/ext.toml:2:1: gate.alignment: \"exactly\" is not one of exact|approximate|none "
            "(did you mean \"exact\"?)");
}

TEST(ExternalSection, WorkdirChangesCountOnlyBetweenTwoExternalArms) {
  auto a = config::Config::parse("[external]\ncommand = [\"t\"]\n", "/x/a.toml");
  auto b = config::Config::parse("[external]\ncommand = [\"t\"]\n", "/y/b.toml");
  auto builtin = config::Config::parse("", "/y/c.toml");
  int workdir = 0;
  for (const auto& c : config::diff(a, b))
    if (c.key == "external.workdir") {
      EXPECT_EQ(c.knob, config::Knob::Exact);
      ++workdir;
    }
  EXPECT_EQ(workdir, 1);
  int seen = 0;
  for (const auto& c : config::diff(builtin, b)) {
    if (c.key == "external.workdir") {
      EXPECT_EQ(c.knob, config::Knob::None);
      ++seen;
    }
    if (c.key == "external.command") {
      EXPECT_EQ(c.knob, config::Knob::Exact);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace lockstep::external
