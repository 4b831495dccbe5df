// The `./lockstep` wrapper end to end: stdout belongs to the command. Every command with
// machine-readable output is run through the wrapper (as a user or a CI step pipes it), its stdout
// parsed as what it claims to be, and its stderr checked: nothing from the set-up or the build
// when nothing is rebuilt (ninja's "no work to do." used to be the first line of every stdout).
// `./lockstep --help` lists the wrapper's verbs and then every command of the binary.
#include <toml++/toml.h>

#include <cstdlib>
#include <set>

#include "cli_util.h"
#include "tests/fixtures/read_file.h"

using namespace lockstep::testing;
using nlohmann::json;

namespace {

struct Streams {
  int exit_code = -1;
  std::string out, err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `./lockstep ARGS...` from the source root with this build folder, stdout and stderr apart.
Streams wrapper(const std::vector<std::string>& args, const TempDir& tmp) {
  static int n = 0;
  const std::string tag = std::to_string(++n);
  const fs::path out = tmp.path() / ("out" + tag), err = tmp.path() / ("err" + tag);
  std::string cmd = "cd " + quote(LOCKSTEP_SOURCE_DIR) + " && LOCKSTEP_BUILD_DIR=" +
                    quote(WRAPPER_BUILD_DIR) + " ./lockstep";
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote(out.string()) + " 2>" + quote(err.string());
  auto st = lockstep::util::wait_for(
      lockstep::util::spawn({"/bin/bash", "-c", cmd}, tmp.path() / ("log" + tag)), 600);
  return Streams{st.signaled ? 128 + st.signal : st.code, read_text(out), read_text(err)};
}

std::string shown(const std::vector<std::string>& args, const Streams& s) {
  std::string a;
  for (const auto& x : args) a += " " + x;
  return "./lockstep" + a + " (exit " + std::to_string(s.exit_code) + ")\n--- stdout:\n" + s.out +
         "\n--- stderr:\n" + s.err;
}

// The generated config reference in docs/config.md (what `config keys` must print).
std::string readme_keys() {
  const std::string readme = read_text(fs::path(LOCKSTEP_SOURCE_DIR) / "docs/config.md");
  const std::string begin = "<!-- BEGIN CONFIG KEYS -->\n", end = "<!-- END CONFIG KEYS -->";
  const auto a = readme.find(begin), b = readme.find(end);
  if (a == std::string::npos || b == std::string::npos) return "";
  return readme.substr(a + begin.size(), b - a - begin.size());
}

}  // namespace

TEST(Wrapper, EveryMachineReadableCommandPrintsOnlyItsOutputOnStdout) {
  TempDir tmp;
  const std::string run = tmp / "run", db = tmp / "history.sqlite";
  auto made = run_lockstep({"run", "configs/baseline.toml", "--steps", "12", "--out", run, "--quiet",
                            "--history", db},
                           tmp.path(), 600);
  ASSERT_EQ(made.exit_code, 0) << made.output;

  // Each command, and how its stdout must parse.
  using Check = std::function<void(const std::string& out)>;
  const std::vector<std::pair<std::vector<std::string>, Check>> commands{
      {{"diagnose", run, "--json", "--out", tmp / "diag"},
       [](const std::string& out) {
         const auto j = json::parse(out);
         EXPECT_TRUE(j["spikes"].is_array());
         EXPECT_EQ(j["steps"], 12);
       }},
      {{"stages", run, "--stages", "2", "--json"},
       [](const std::string& out) { EXPECT_EQ(json::parse(out)["stages"], 2); }},
      {{"history", "show", "1", "--history", db},
       [](const std::string& out) { EXPECT_EQ(json::parse(out)["id"], 1); }},
      {{"history", "export", "--format", "json", "--history", db},
       [](const std::string& out) { EXPECT_EQ(json::parse(out).size(), 1u); }},
      {{"history", "export", "--format", "csv", "--history", db},
       [](const std::string& out) {
         ASSERT_FALSE(out.empty());
         EXPECT_EQ(out.rfind("id,", 0), 0u) << "the CSV header comes first";
         EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);  // header + one entry
       }},
      {{"config", "keys"},
       [](const std::string& out) {
         EXPECT_FALSE(readme_keys().empty());
         EXPECT_EQ(out, readme_keys()) << "`config keys > keys.md` is docs/config.md's reference";
       }},
      {{"config", "show", "configs/variants/bf16.toml"},
       [](const std::string& out) {
         auto t = toml::parse(out);  // throws on anything that is not TOML
         EXPECT_EQ(t["precision"]["compute"].value<std::string>(), "bf16");
       }},
      {{"config", "show", "--plain", "configs/baseline.toml"},
       [](const std::string& out) {
         auto t = toml::parse(out);
         EXPECT_EQ(t["run"]["steps"].value<int64_t>(), 200);
       }},
      {{"config", "diff", "configs/baseline.toml", "configs/variants/bf16.toml"},
       [](const std::string& out) {
         EXPECT_NE(out.find("precision.compute: \"fp32\" -> \"bf16\"\n"), std::string::npos) << out;
       }},
      {{"trace-check", run + "/trace.rank0.json"},
       [](const std::string& out) { EXPECT_EQ(out, "valid: 1 trace file\n"); }},
      {{"--version"}, [](const std::string& out) { EXPECT_EQ(out, "lockstep 0.1\n"); }},
  };
  for (const auto& [args, check] : commands) {
    const Streams s = wrapper(args, tmp);
    ASSERT_EQ(s.exit_code, 0) << shown(args, s);
    EXPECT_EQ(s.err, "") << "nothing was rebuilt: the wrapper must be silent\n" << shown(args, s);
    EXPECT_EQ(s.out.find("ninja"), std::string::npos) << shown(args, s);
    try {
      check(s.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "stdout does not parse: " << e.what() << "\n" << shown(args, s);
    }
  }
}

TEST(Wrapper, HelpListsTheWrapperVerbsThenEveryCommandOfTheBinary) {
  TempDir tmp;
  const Streams s = wrapper({"--help"}, tmp);
  ASSERT_EQ(s.exit_code, 0) << shown({"--help"}, s);
  EXPECT_EQ(s.err, "") << shown({"--help"}, s);
  for (const char* verb : {"./lockstep demo", "./lockstep test", "./lockstep build",
                           "./lockstep setup", "LOCKSTEP_BUILD_DIR"})
    EXPECT_NE(s.out.find(verb), std::string::npos) << verb << "\n" << s.out;
  EXPECT_EQ(s.out.find("set -euo pipefail"), std::string::npos) << s.out;
  // Every subcommand the binary has, as its own --help lists them.
  auto bin = run_lockstep({"--help"}, tmp.path(), 60);
  ASSERT_EQ(bin.exit_code, 0) << bin.output;
  const auto at = bin.output.find("Subcommands:");
  ASSERT_NE(at, std::string::npos) << bin.output;
  std::istringstream lines(bin.output.substr(at));
  std::string line;
  std::getline(lines, line);
  int n = 0;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string cmd;
    if (!(words >> cmd)) continue;
    ++n;
    EXPECT_NE(s.out.find("\n  " + cmd + " "), std::string::npos)
        << "`./lockstep --help` does not list " << cmd << "\n"
        << s.out;
  }
  EXPECT_GE(n, 10) << bin.output;  // run, compare, bisect, scale, diagnose, stages, history, ...
  // The wrapper's verbs come first.
  EXPECT_LT(s.out.find("./lockstep demo"), s.out.find("\n  compare "));
}
