// Unit tests for harness/config: every kind of malformed config yields one ConfigError whose
// what() is exactly one line "file:line:col: key: what is wrong" (checked to the column), and the
// positive paths: defaults, presets, extends overlays, --set overrides, to_toml() round trips,
// hash(), diff() and did_you_mean().
#include "harness/config/config.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "tests/fixtures/read_file.h"

namespace lockstep::config {
namespace {

namespace fs = std::filesystem;
using Overrides = std::vector<std::string>;

// --- helpers ------------------------------------------------------------------------------------

// The ConfigError that parsing TEXT throws (a test failure, and nullopt, when nothing is thrown).
std::optional<ConfigError> ParseError(std::string_view text, const Overrides& overrides = {},
                                      const std::string& label = "t.toml") {
  try {
    Config::parse(text, label, overrides);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for:\n" << text;
  return std::nullopt;
}

std::optional<ConfigError> LoadError(const fs::path& file, const Overrides& overrides = {}) {
  try {
    Config::load(file, overrides);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError loading " << file;
  return std::nullopt;
}

// Checks the location, the key, a distinctive part of the message, and the one-line format.
void ExpectError(const std::optional<ConfigError>& e, const std::string& file, int line, int col,
                 const std::string& key, const std::string& what_part) {
  ASSERT_TRUE(e.has_value());
  const std::string what = e->what();
  EXPECT_EQ(e->loc().file, file) << what;
  EXPECT_EQ(e->loc().line, line) << what;
  EXPECT_EQ(e->loc().col, col) << what;
  EXPECT_EQ(e->key(), key) << what;
  EXPECT_NE(what.find(what_part), std::string::npos) << "\"" << what_part << "\" not in: " << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.find('\r'), std::string::npos) << what;
  std::string shown_key = key;  // control characters are shown as spaces
  for (char& c : shown_key)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  const std::string prefix =
      file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + shown_key + ": ";
  EXPECT_EQ(what.rfind(prefix, 0), 0u) << "expected prefix \"" << prefix << "\" in: " << what;
}

void ExpectNoSuggestion(const std::optional<ConfigError>& e) {
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()).find("did you mean"), std::string::npos) << e->what();
}

// A fresh directory under the system temp folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        "lockstep-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    if (info) name += std::string("-") + info->name();
    path_ = (fs::temp_directory_path() / name).lexically_normal();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  // Writes TEXT to the relative path REL (creating folders) and returns the full path.
  fs::path write(const std::string& rel, const std::string& text) const {
    fs::path p = path_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string str(const std::string& rel) const {
    return (path_ / rel).lexically_normal().string();
  }

 private:
  fs::path path_;
};

// Effective values only (locations differ between a config and its re-parse).
std::map<std::string, Value> Values(const Config& c) {
  std::map<std::string, Value> out;
  for (const auto& [k, e] : c.entries()) out[k] = e.value;
  return out;
}

void ExpectRoundTrip(const Config& c) {
  const std::string text = c.to_toml();
  Config again = Config::parse(text, "roundtrip.toml");
  EXPECT_EQ(Values(again), Values(c)) << text;
  EXPECT_EQ(again.hash(), c.hash()) << text;
  EXPECT_EQ(again.to_toml(), text);
  EXPECT_TRUE(diff(c, again).empty()) << text;
}

const char* kBaseline =
    "# base\n"
    "[run]\n"
    "name = \"baseline\"\n"
    "seed = 1234\n"
    "steps = 200\n"
    "\n"
    "[model]\n"
    "preset = \"tiny\"\n"
    "\n"
    "[optim]\n"
    "lr = 3e-3\n";

// --- malformed configs: syntax ------------------------------------------------------------------

TEST(ConfigErrors, SyntaxMissingValue) {
  ExpectError(ParseError("[run]\nseed =\n"), "t.toml", 2, 7, "<syntax>", "Error while parsing");
}

TEST(ConfigErrors, SyntaxUnterminatedString) {
  auto e = ParseError("[run]\nname = \"abc\n");
  ExpectError(e, "t.toml", 2, 12, "<syntax>", "string");
}

TEST(ConfigErrors, SyntaxDuplicateKey) {
  ExpectError(ParseError("[run]\nseed = 1\nseed = 2\n"), "t.toml", 3, 8, "<syntax>",
              "cannot redefine existing integer 'seed'");
}

TEST(ConfigErrors, SyntaxUnclosedSectionHeader) {
  // The newline in toml++'s message ("saw '\n'") is escaped: still one line.
  ExpectError(ParseError("[run]\nseed = 1\n[model\npreset = \"tiny\"\n"), "t.toml", 3, 7,
              "<syntax>", "Error while parsing table header: expected ']'");
}

TEST(ConfigErrors, SyntaxMalformedTableHeader) {
  // toml++ 3.3 asserts on these in builds with asserts on (marzer/tomlplusplus#301).
  ExpectError(ParseError("[[[1]]]\n"), "t.toml", 1, 3, "<syntax>",
              "expected bare key starting character or string delimiter, saw '['");
  ExpectError(ParseError("[run]\nseed = 1\n[\x01run]\n"), "t.toml", 3, 2, "<syntax>",
              "saw '\\u0001'");
}

// --- unknown keys and sections -----------------------------------------------------------------

TEST(ConfigErrors, UnknownKeySuggestsClosest) {
  ExpectError(ParseError("[run]\nseed = 1\n  sed = 2\n"), "t.toml", 3, 3, "run.sed",
              "unknown key (did you mean \"seed\"?)");
}

TEST(ConfigErrors, UnknownKeySuggestsOtherSection) {
  // "lr" is not close to any [run] key, but it is the name of optim.lr.
  ExpectError(ParseError("[run]\nlr = 0.1\n"), "t.toml", 2, 1, "run.lr",
              "unknown key (did you mean \"optim.lr\"?)");
}

TEST(ConfigErrors, UnknownKeyWithoutSuggestion) {
  auto e = ParseError("[attention]\nimpl = \"math\"\nflux_capacitor = 3\n");
  ExpectError(e, "t.toml", 3, 1, "attention.flux_capacitor", "unknown key");
  ExpectNoSuggestion(e);
}

TEST(ConfigErrors, UnknownSectionSuggestsClosest) {
  ExpectError(ParseError("[run]\nseed = 1\n\n[precison]\ncompute = \"bf16\"\n"), "t.toml", 4, 2,
              "[precison]", "unknown section (did you mean \"[precision]\"?)");
}

TEST(ConfigErrors, UnknownSectionWithoutSuggestion) {
  auto e = ParseError("[scheduler]\nkind = \"cosine\"\n");
  ExpectError(e, "t.toml", 1, 2, "[scheduler]", "unknown section");
  ExpectNoSuggestion(e);
}

TEST(ConfigErrors, TopLevelKeyOutsideSection) {
  ExpectError(ParseError("seed = 7\n[run]\nsteps = 10\n"), "t.toml", 1, 1, "seed",
              "top-level key must be inside a [section] (did you mean \"run.seed\"?)");
}

TEST(ConfigErrors, TopLevelUnknownKeyOutsideSection) {
  auto e = ParseError("# comment\ncolour = \"blue\"\n");
  ExpectError(e, "t.toml", 2, 1, "colour", "top-level key must be inside a [section]");
  ExpectNoSuggestion(e);
}

TEST(ConfigErrors, ArrayOfTablesIsNotASection) {
  ExpectError(ParseError("[[run]]\nseed = 1\n"), "t.toml", 1, 3, "run",
              "must be inside a [section]");
}

TEST(ConfigErrors, KeyWithControlCharacterStaysOneLine) {
  // A quoted key may hold a carriage return or a newline; the message must still be one line.
  auto e = ParseError("[run]\n\"a\\r\\nb\" = 1\n");
  ExpectError(e, "t.toml", 2, 1, "run.a\r\nb", "unknown key");
}

// --- wrong types -------------------------------------------------------------------------------

TEST(ConfigErrors, IntegerGotString) {
  ExpectError(ParseError("[run]\nseed = \"1234\"\n"), "t.toml", 2, 1, "run.seed",
              "expected an integer, got string");
}

TEST(ConfigErrors, IntegerGotFloat) {
  ExpectError(ParseError("[run]\nsteps = 2.5\n"), "t.toml", 2, 1, "run.steps",
              "expected an integer, got float");
}

// An integer key with words beside its numbers ([gate] repeats = "auto"): the words pass, any
// other string or a float is named with both forms the key takes.
TEST(ConfigErrors, IntegerOrWordGotAnotherWordOrAFloat) {
  EXPECT_EQ(format_value(Config::parse("[gate]\nrepeats = \"auto\"\n", "t.toml").value(
                "gate.repeats")),
            "\"auto\"");
  EXPECT_EQ(Config::parse("[gate]\nrepeats = 7\n", "t.toml").integer("gate.repeats"), 7);
  EXPECT_EQ(format_value(Config::parse("", "t.toml", {"gate.repeats=auto"}).value("gate.repeats")),
            "\"auto\"");
  ExpectError(ParseError("[gate]\nrepeats = \"often\"\n"), "t.toml", 2, 1, "gate.repeats",
              "\"often\" is not one of auto");
  ExpectError(ParseError("[gate]\nrepeats = 2.5\n"), "t.toml", 2, 1, "gate.repeats",
              "expected an integer or \"auto\", got float");
  ExpectError(ParseError("[gate]\nrepeats = 0\n"), "t.toml", 2, 1, "gate.repeats",
              "out of range: 0 (must be >= 1)");
}

TEST(ConfigErrors, FloatGotString) {
  ExpectError(ParseError("[optim]\n    lr = \"fast\"\n"), "t.toml", 2, 5, "optim.lr",
              "expected a number, got string");
}

TEST(ConfigErrors, StringGotInteger) {
  ExpectError(ParseError("[run]\ndevice = 0\n"), "t.toml", 2, 1, "run.device",
              "expected a string, got integer");
}

TEST(ConfigErrors, StringGotBoolean) {
  ExpectError(ParseError("[precision]\ncompute = true\n"), "t.toml", 2, 1, "precision.compute",
              "expected a string, got boolean");
}

TEST(ConfigErrors, BoolGotString) {
  ExpectError(ParseError("[profile]\ntrace = \"yes\"\n"), "t.toml", 2, 1, "profile.trace",
              "expected true or false, got string");
}

TEST(ConfigErrors, IntegerGotArray) {
  ExpectError(ParseError("[run]\nseed = [1, 2]\n"), "t.toml", 2, 1, "run.seed",
              "expected an integer, got array");
}

TEST(ConfigErrors, IntegerGotDate) {
  ExpectError(ParseError("[run]\nseed = 1979-05-27\n"), "t.toml", 2, 1, "run.seed",
              "expected an integer, got date/time");
}

TEST(ConfigErrors, KeyGivenAsSubTable) {
  // [run.seed] makes run.seed a table.
  ExpectError(ParseError("[run.seed]\nx = 1\n"), "t.toml", 1, 6, "run.seed",
              "expected an integer, got table");
}

// --- ranges and choices -------------------------------------------------------------------------

TEST(ConfigErrors, IntegerBelowMinimum) {
  ExpectError(ParseError("[run]\nsteps = 0\n"), "t.toml", 2, 1, "run.steps",
              "out of range: 0 (must be >= 1)");
}

TEST(ConfigErrors, IntegerAboveMaximum) {
  ExpectError(ParseError("[parallel]\nzero_stage = 4\n"), "t.toml", 2, 1, "parallel.zero_stage",
              "out of range: 4 (must be <= 3)");
}

TEST(ConfigErrors, LargeIntegerBoundPrintedAsInteger) {
  ExpectError(ParseError("[faults]\nstall_every = 2000000000\n"), "t.toml", 2, 1,
              "faults.stall_every", "out of range: 2000000000 (must be <= 1000000000)");
}

TEST(ConfigErrors, NegativeInteger) {
  ExpectError(ParseError("[faults]\nkill_rank = -2\n"), "t.toml", 2, 1, "faults.kill_rank",
              "out of range: -2 (must be >= -1)");
}

TEST(ConfigErrors, FloatAboveMaximum) {
  ExpectError(ParseError("[optim]\nbeta1 = 1.5\n"), "t.toml", 2, 1, "optim.beta1",
              "out of range: 1.5 (must be <= 0.999999)");
}

TEST(ConfigErrors, FloatBelowMinimum) {
  ExpectError(ParseError("[parallel]\nbucket_mb = 0.0001\n"), "t.toml", 2, 1, "parallel.bucket_mb",
              "out of range: 1e-04 (must be >= 0.001)");
}

TEST(ConfigErrors, FloatInfinity) {
  ExpectError(ParseError("[optim]\nlr = inf\n"), "t.toml", 2, 1, "optim.lr",
              "out of range: inf (must be <= 10.0)");
}

TEST(ConfigErrors, FloatNaN) {
  ExpectError(ParseError("[optim]\nlr = nan\n"), "t.toml", 2, 1, "optim.lr",
              "must be a number, got nan");
}

TEST(ConfigErrors, BadChoiceSuggestsClosest) {
  ExpectError(ParseError("[precision]\ncompute = \"bf61\"\n"), "t.toml", 2, 1, "precision.compute",
              "\"bf61\" is not one of fp32|tf32|bf16|fp16 (did you mean \"bf16\"?)");
}

TEST(ConfigErrors, BadChoiceWithoutSuggestion) {
  auto e = ParseError("[attention]\nimpl = \"flash-attention-3\"\n");
  ExpectError(e, "t.toml", 2, 1, "attention.impl",
              "\"flash-attention-3\" is not a registered attention (registered: math, fused)");
  ExpectNoSuggestion(e);
}

TEST(ConfigErrors, BadPreset) {
  ExpectError(ParseError("[model]\npreset = \"gpt2-125m\"\n"), "t.toml", 2, 1, "model.preset",
              "is not one of tiny|small|gpt2-124m (did you mean \"gpt2-124m\"?)");
}

// --- cross-key rules (finalize) -----------------------------------------------------------------

TEST(ConfigErrors, NHeadsDoesNotDivideDModel) {
  ExpectError(ParseError("[model]\npreset = \"tiny\"\nn_heads = 5\n"), "t.toml", 3, 1,
              "model.n_heads", "n_heads = 5 does not divide d_model = 128");
}

TEST(ConfigErrors, DModelNotDivisibleByPresetHeads) {
  // n_heads = 4 comes from the (default) preset: the error points at the d_model the user wrote.
  ExpectError(ParseError("[model]\nd_model = 130\n"), "t.toml", 2, 1, "model.d_model",
              "n_heads = 4 does not divide d_model = 130");
}

TEST(ConfigErrors, WarmupLeavesNoTimedStep) {
  ExpectError(ParseError("[run]\nsteps = 10\nwarmup_steps = 10\n"), "t.toml", 3, 1,
              "run.warmup_steps", "warmup_steps = 10 leaves no timed step (steps = 10)");
}

TEST(ConfigErrors, StepsBelowDefaultWarmup) {
  // warmup_steps is the default 5: the error points at steps, the key the user wrote.
  ExpectError(ParseError("[run]\nsteps = 3\n"), "t.toml", 2, 1, "run.steps",
              "warmup_steps = 5 leaves no timed step (steps = 3)");
}

TEST(ConfigErrors, MinLrAboveLr) {
  ExpectError(ParseError("[optim]\nlr = 1e-3\nmin_lr = 2e-3\n"), "t.toml", 3, 1, "optim.min_lr",
              "min_lr must not exceed lr");
  ExpectError(ParseError("[optim]\nlr = 1e-4\n"), "t.toml", 2, 1, "optim.lr",
              "min_lr must not exceed lr");
}

TEST(ConfigErrors, BatchNotDivisibleByWorldSize) {
  ExpectError(ParseError("[parallel]\nworld_size = 3\n"), "t.toml", 2, 1, "parallel.world_size",
              "batch_size = 8 (global) is not divisible by world_size = 3");
  ExpectError(ParseError("[parallel]\nworld_size = 2\n[data]\nbatch_size = 5\n"), "t.toml", 4, 1,
              "data.batch_size", "batch_size = 5 (global) is not divisible by world_size = 2");
}

TEST(ConfigErrors, FanoutExceedsVocab) {
  ExpectError(ParseError("[model]\nvocab_size = 2\n"), "t.toml", 2, 1, "model.vocab_size",
              "fanout must not exceed vocab_size");
}

TEST(ConfigErrors, NcclNeedsCuda) {
  ExpectError(ParseError("[parallel]\nbackend = \"nccl\"\n"), "t.toml", 2, 1, "parallel.backend",
              "nccl needs run.device");
}

TEST(ConfigErrors, TextSourceNeedsPath) {
  ExpectError(ParseError("[data]\nsource = \"text\"\n"), "t.toml", 2, 1, "data.source",
              "source \"text\" needs data.path");
}

TEST(ConfigErrors, TextSourceNeedsByteVocab) {
  ExpectError(
      ParseError("[data]\nsource = \"text\"\npath = \"x.txt\"\n[model]\nvocab_size = 100\n"),
      "t.toml", 5, 1, "model.vocab_size", "vocab_size must be >= 256");
}

// --- --set overrides ----------------------------------------------------------------------------

TEST(ConfigErrors, OverrideWithoutEquals) {
  ExpectError(ParseError("", {"run.seed"}), "<--set run.seed>", 1, 1, "run.seed",
              "expected section.key=value");
}

TEST(ConfigErrors, OverrideWithoutSection) {
  ExpectError(ParseError("", {"seed=3"}), "<--set seed=3>", 1, 1, "seed",
              "expected section.key=value");
}

TEST(ConfigErrors, OverrideUnknownSection) {
  ExpectError(ParseError("", {"precison.compute=bf16"}), "<--set precison.compute=bf16>", 1, 1,
              "precison.compute", "unknown section (did you mean \"[precision]\"?)");
}

TEST(ConfigErrors, OverrideUnknownKey) {
  ExpectError(ParseError("", {"optim.learning_rate=0.1"}), "<--set optim.learning_rate=0.1>", 1, 1,
              "optim.learning_rate", "unknown key");
}

TEST(ConfigErrors, OverrideWrongType) {
  // A bare word is a string, and run.seed wants an integer.
  ExpectError(ParseError("", {"run.seed=abc"}), "<--set run.seed=abc>", 1, 1, "run.seed",
              "expected an integer, got string");
}

TEST(ConfigErrors, OverrideOutOfRange) {
  ExpectError(ParseError("[run]\nseed = 1\n", {"run.steps=-5"}), "<--set run.steps=-5>", 1, 1,
              "run.steps", "out of range: -5 (must be >= 1)");
}

TEST(ConfigErrors, OverrideBadChoice) {
  ExpectError(ParseError("", {"precision.compute=bf17"}), "<--set precision.compute=bf17>", 1, 1,
              "precision.compute", "is not one of fp32|tf32|bf16|fp16 (did you mean \"bf16\"?)");
}

TEST(ConfigErrors, OverrideUnparseableValue) {
  // Neither TOML nor a bare word (an unbalanced quote).
  ExpectError(ParseError("", {"run.name=a\"b"}), "<--set run.name=a\"b>", 1, 1, "run.name",
              "Error while parsing");
}

TEST(ConfigErrors, OverrideTriggersCrossKeyRule) {
  ExpectError(ParseError("[model]\npreset = \"tiny\"\n", {"model.n_heads=3"}),
              "<--set model.n_heads=3>", 1, 1, "model.n_heads",
              "n_heads = 3 does not divide d_model = 128");
}

// --- files and extends --------------------------------------------------------------------------

// A file that cannot be read is named alone: no "0:0" location and no key, since neither exists;
// a missing one gets a suggestion from the names in its folder.
TEST(ConfigErrors, MissingFile) {
  TempDir dir;
  const fs::path p = dir.path() / "nope.toml";
  auto e = LoadError(p);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()), p.string() + ": no such file");
  EXPECT_EQ(e->key(), "");
  std::ofstream(dir.path() / "baseline.toml") << "[run]\nsteps = 3\n";
  e = LoadError(dir.path() / "baselin.toml");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()), (dir.path() / "baselin.toml").string() +
                                        ": no such file (did you mean \"" +
                                        (dir.path() / "baseline.toml").string() + "\"?)");
  // A relative name keeps the folder as the user wrote it.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  e = LoadError("baselne.toml");
  fs::current_path(cwd);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()), "baselne.toml: no such file (did you mean \"baseline.toml\"?)");
}

TEST(ConfigErrors, DirectoryIsNotAFile) {
  TempDir dir;
  fs::create_directories(dir.path() / "sub.toml");
  auto e = LoadError(dir.path() / "sub.toml");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()),
            (dir.path() / "sub.toml").string() + ": a folder, not a config file");
}

// A flag that stands for a key is named as typed, not as an override the user never wrote.
TEST(ConfigErrors, AFlagOverrideIsNamedAsTheFlag) {
  TempDir dir;
  std::ofstream(dir.path() / "c.toml") << "[run]\nseed = 1\n";
  try {
    Config::load(dir.path() / "c.toml", {}, {{"--steps 0", "run.steps=0"}});
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "--steps 0: run.steps: out of range: 0 (must be >= 1)");
  }
  const Config c = Config::load(dir.path() / "c.toml", {"run.steps=7"}, {{"--steps 30", "run.steps=30"}});
  EXPECT_EQ(c.integer("run.steps"), 30);  // the flag wins over --set, as it always did
  EXPECT_NE(c.to_toml(true).find("steps = 30  # from --steps 30"), std::string::npos)
      << c.to_toml(true);
}

TEST(ConfigErrors, MissingExtendsTarget) {
  TempDir dir;
  const fs::path v =
      dir.write("variants/v.toml", "# variant\nextends = \"../missing.toml\"\n[run]\nseed = 1\n");
  ExpectError(LoadError(v), v.string(), 2, 11, "extends",
              "cannot read \"" + dir.str("missing.toml") + "\": no such file");
}

TEST(ConfigErrors, ExtendsNotAString) {
  ExpectError(ParseError("extends = 42\n[run]\nseed = 1\n"), "t.toml", 1, 11, "extends",
              "expected a string (a path), got integer");
}

TEST(ConfigErrors, CyclicExtends) {
  TempDir dir;
  const fs::path a = dir.write("a.toml", "extends = \"b.toml\"\n[run]\nseed = 1\n");
  dir.write("b.toml", "# b\n\nextends = \"a.toml\"\n");
  ExpectError(LoadError(a), dir.str("b.toml"), 3, 11, "extends",
              "cyclic extends: a.toml -> b.toml -> a.toml");
}

TEST(ConfigErrors, SelfExtends) {
  TempDir dir;
  const fs::path a = dir.write("self.toml", "extends = \"./self.toml\"\n");
  ExpectError(LoadError(a), a.string(), 1, 11, "extends", "cyclic extends: self.toml -> self.toml");
}

TEST(ConfigErrors, ExtendsChainTooDeep) {
  TempDir dir;
  for (int i = 0; i < 20; ++i)
    dir.write("c" + std::to_string(i) + ".toml",
              "extends = \"c" + std::to_string(i + 1) + ".toml\"\n");
  dir.write("c20.toml", "[run]\nseed = 1\n");
  // c0 is the 1st file: the 17th (c16) is one too many.
  ExpectError(LoadError(dir.path() / "c0.toml"), dir.str("c16.toml"), 1, 1, "extends",
              "extends chain deeper than 16 files");
}

TEST(ConfigErrors, ErrorInBaseFilePointsIntoBase) {
  TempDir dir;
  dir.write("base.toml", "[run]\nseed = 1\n\n[optim]\n  lr = \"high\"\n");
  const fs::path v =
      dir.write("variants/v.toml", "extends = \"../base.toml\"\n[precision]\ncompute = \"bf16\"\n");
  ExpectError(LoadError(v), dir.str("base.toml"), 5, 3, "optim.lr",
              "expected a number, got string");
}

TEST(ConfigErrors, ErrorInVariantPointsIntoVariant) {
  TempDir dir;
  dir.write("base.toml", kBaseline);
  const fs::path v = dir.write("variants/v.toml",
                               "extends = \"../base.toml\"\n\n[precision]\ncompute = \"bf8\"\n");
  ExpectError(LoadError(v), v.string(), 4, 1, "precision.compute", "\"bf8\" is not one of");
}

TEST(ConfigErrors, CrossKeyRuleAcrossFilesPointsAtTheSettingFile) {
  TempDir dir;
  dir.write("base.toml", "[model]\npreset = \"small\"\n");
  const fs::path v = dir.write("v.toml", "extends = \"base.toml\"\n[model]\nn_heads = 7\n");
  ExpectError(LoadError(v), v.string(), 3, 1, "model.n_heads",
              "n_heads = 7 does not divide d_model = 256");
}

TEST(ConfigErrors, ParseResolvesExtendsAgainstLabelFolder) {
  TempDir dir;
  const std::string label = (dir.path() / "in_memory.toml").string();
  ExpectError(ParseError("extends = \"absent.toml\"\n", {}, label), label, 1, 11, "extends",
              "cannot read \"" + dir.str("absent.toml") + "\"");
}

// --- positive: defaults and presets -------------------------------------------------------------

TEST(Config, DefaultsFilled) {
  Config c = Config::parse("", "configs/my_run.toml");
  // Every schema key has an entry; the ones without a default have no value.
  size_t keys = 0;
  for (const auto* s : all_sections()) {
    for (const auto& k : s->keys) {
      ++keys;
      EXPECT_EQ(c.entries().count(s->name + "." + k.name), 1u) << k.name;
    }
  }
  EXPECT_EQ(c.entries().size(), keys);
  EXPECT_EQ(c.integer("run.seed"), 1234);
  EXPECT_EQ(c.integer("run.steps"), 200);
  EXPECT_EQ(c.str("run.device"), "cpu");
  EXPECT_DOUBLE_EQ(c.number("optim.lr"), 3e-3);
  EXPECT_EQ(c.str("precision.compute"), "fp32");
  EXPECT_EQ(c.str("attention.impl"), "math");
  EXPECT_EQ(c.integer("parallel.world_size"), 1);
  EXPECT_EQ(c.str("run.name"), "my_run");  // from the file name
  EXPECT_FALSE(c.is_set("run.seed"));
  EXPECT_FALSE(c.is_set("run.name"));
  EXPECT_FALSE(c.has_value("data.path"));
  EXPECT_FALSE(c.has_value("gate.min_speedup_pct"));
  EXPECT_EQ(c.where("run.seed").line, 0);
  EXPECT_EQ(c.path(), "configs/my_run.toml");
}

TEST(Config, ExplicitValuesAreSetWithTheirLocation) {
  Config c = Config::parse("[run]\n\nseed = 99\n[optim]\nlr = 1\n", "t.toml");
  EXPECT_EQ(c.integer("run.seed"), 99);
  EXPECT_TRUE(c.is_set("run.seed"));
  EXPECT_EQ(c.where("run.seed").file, "t.toml");
  EXPECT_EQ(c.where("run.seed").line, 3);
  EXPECT_EQ(c.where("run.seed").col, 1);
  // An integer is accepted for a float key and stored as a double.
  EXPECT_TRUE(std::holds_alternative<double>(c.value("optim.lr")));
  EXPECT_DOUBLE_EQ(c.number("optim.lr"), 1.0);
}

TEST(Config, DefaultPresetResolved) {
  Config c = Config::parse("", "t.toml");
  EXPECT_EQ(c.str("model.preset"), "tiny");
  EXPECT_EQ(c.integer("model.d_model"), 128);
  EXPECT_EQ(c.integer("model.n_layers"), 2);
  EXPECT_EQ(c.integer("model.n_heads"), 4);
  EXPECT_EQ(c.integer("model.seq_len"), 64);
  EXPECT_EQ(c.integer("model.vocab_size"), 512);
  EXPECT_FALSE(c.is_set("model.d_model"));  // derived from a default preset: still a default
}

TEST(Config, PresetResolution) {
  Config c = Config::parse("[model]\npreset = \"gpt2-124m\"\n", "t.toml");
  EXPECT_EQ(c.integer("model.d_model"), 768);
  EXPECT_EQ(c.integer("model.n_layers"), 12);
  EXPECT_EQ(c.integer("model.n_heads"), 12);
  EXPECT_EQ(c.integer("model.seq_len"), 1024);
  EXPECT_EQ(c.integer("model.vocab_size"), 50304);
  // Derived keys remember the preset's location.
  EXPECT_TRUE(c.is_set("model.d_model"));
  EXPECT_EQ(c.where("model.d_model").line, 2);
}

TEST(Config, ExplicitKeyBeatsPreset) {
  Config c = Config::parse("[model]\npreset = \"small\"\nn_layers = 1\nn_heads = 16\n", "t.toml");
  EXPECT_EQ(c.integer("model.d_model"), 256);  // from the preset
  EXPECT_EQ(c.integer("model.n_layers"), 1);   // explicit
  EXPECT_EQ(c.integer("model.n_heads"), 16);   // explicit
  EXPECT_EQ(c.where("model.n_heads").line, 4);
  EXPECT_EQ(c.integer("model.vocab_size"), 2048);
}

// --- positive: extends --------------------------------------------------------------------------

TEST(Config, ExtendsOverlay) {
  TempDir dir;
  const fs::path base = dir.write("baseline.toml", kBaseline);
  const fs::path v = dir.write("variants/bf16.toml",
                               "extends = \"../baseline.toml\"\n\n[run]\nname = "
                               "\"bf16\"\n\n[precision]\ncompute = \"bf16\"\n");
  Config b = Config::load(base);
  Config c = Config::load(v);
  EXPECT_EQ(c.str("precision.compute"), "bf16");
  EXPECT_EQ(c.str("run.name"), "bf16");
  EXPECT_EQ(c.integer("run.seed"), 1234);  // base keys kept
  EXPECT_EQ(c.integer("run.steps"), 200);
  EXPECT_DOUBLE_EQ(c.number("optim.lr"), 3e-3);
  // Locations point into the file that set the key.
  EXPECT_EQ(c.where("precision.compute").file, v.string());
  EXPECT_EQ(c.where("precision.compute").line, 7);
  EXPECT_EQ(c.where("run.seed").file, dir.str("baseline.toml"));
  EXPECT_EQ(c.where("run.seed").line, 4);
  EXPECT_EQ(c.where("run.name").file, v.string());
  EXPECT_EQ(c.path(), v.string());

  std::vector<Change> d = diff(b, c);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].key, "run.name");
  EXPECT_EQ(d[0].before, "\"baseline\"");
  EXPECT_EQ(d[0].after, "\"bf16\"");
  EXPECT_EQ(d[0].knob, Knob::None);
  EXPECT_EQ(d[1].key, "precision.compute");
  EXPECT_EQ(d[1].before, "\"fp32\"");
  EXPECT_EQ(d[1].after, "\"bf16\"");
  EXPECT_EQ(d[1].knob, Knob::Approximate);

  // The annotated form says which file set what.
  const std::string shown = c.to_toml(true);
  EXPECT_NE(shown.find("seed = 1234  # from " + dir.str("baseline.toml")), std::string::npos)
      << shown;
  EXPECT_NE(shown.find("compute = \"bf16\"\n"), std::string::npos) << shown;
  EXPECT_NE(shown.find("world_size = 1  # default"), std::string::npos) << shown;
}

TEST(Config, ExtendsChainResolvesEachRelativeToItsFile) {
  TempDir dir;
  dir.write("root.toml", "[run]\nseed = 1\nsteps = 100\n");
  dir.write("mid/mid.toml", "extends = \"../root.toml\"\n[run]\nseed = 2\n");
  const fs::path leaf =
      dir.write("mid/deep/leaf.toml", "extends = \"../mid.toml\"\n[run]\nsteps = 300\n");
  Config c = Config::load(leaf);
  EXPECT_EQ(c.integer("run.seed"), 2);
  EXPECT_EQ(c.integer("run.steps"), 300);
  EXPECT_EQ(c.where("run.seed").file, dir.str("mid/mid.toml"));
  EXPECT_EQ(c.str("run.name"), "leaf");
}

TEST(Config, ExtendsEachLevelOverridesTheOneBelow) {
  TempDir dir;
  dir.write("base.toml", "[run]\nseed = 5\nsteps = 30\n");
  dir.write("a.toml", "extends = \"base.toml\"\n[run]\nsteps = 40\n");
  const fs::path top =
      dir.write("top.toml", "extends = \"a.toml\"\n[run]\nwarmup_steps = 2\nsteps = 50\n");
  Config c = Config::load(top);
  EXPECT_EQ(c.integer("run.seed"), 5);
  EXPECT_EQ(c.integer("run.steps"), 50);
  EXPECT_EQ(c.integer("run.warmup_steps"), 2);
  EXPECT_EQ(c.where("run.seed").file, dir.str("base.toml"));
  EXPECT_EQ(c.where("run.steps").file, top.string());
  EXPECT_EQ(c.where("run.steps").line, 4);
  EXPECT_EQ(Config::load(dir.path() / "a.toml").integer("run.steps"), 40);
}

TEST(Config, RepositoryVariantsChangeOneKnob) {
  const fs::path root = LOCKSTEP_SOURCE_DIR;
  Config base = Config::load(root / "configs/baseline.toml");
  const std::map<std::string, std::string> expected{
      {"bf16", "precision.compute"},
      {"fp16", "precision.compute"},
      {"tf32", "precision.compute"},
      {"fused_attention", "attention.impl"},
  };
  for (const auto& [name, key] : expected) {
    Config v = Config::load(root / "configs/variants" / (name + ".toml"));
    // Exactly one key that matters for the computation; bookkeeping (run.name, gate bounds) may
    // differ.
    std::set<std::string> changed;
    for (const auto& ch : diff(base, v))
      if (ch.knob != Knob::None) changed.insert(ch.key);
    EXPECT_EQ(changed, (std::set<std::string>{key})) << name;
    EXPECT_EQ(v.str("run.name"), name);
    EXPECT_NE(v.hash(), base.hash()) << name;
    ExpectRoundTrip(v);
  }
}

// --- positive: overrides ------------------------------------------------------------------------

TEST(Config, OverridesTypedAndBareValues) {
  Config c = Config::parse(
      "[run]\nseed = 1\n", "t.toml",
      {"run.seed=42", "optim.lr=0.01", "optim.min_lr=0", "precision.compute=bf16",
       "run.name=\"quoted name\"", " attention.impl = fused", "gate.min_speedup_pct=-5"});
  EXPECT_EQ(c.integer("run.seed"), 42);  // the override beats the file
  EXPECT_DOUBLE_EQ(c.number("optim.lr"), 0.01);
  EXPECT_TRUE(
      std::holds_alternative<double>(c.value("optim.min_lr")));  // integer 0 for a float key
  EXPECT_EQ(c.str("precision.compute"), "bf16");                 // bare word = string
  EXPECT_EQ(c.str("run.name"), "quoted name");
  EXPECT_EQ(c.str("attention.impl"), "fused");  // spaces around the key and value are fine
  EXPECT_DOUBLE_EQ(c.number("gate.min_speedup_pct"), -5.0);
  EXPECT_TRUE(c.is_set("precision.compute"));
  EXPECT_EQ(c.where("run.seed").file, "<--set run.seed=42>");
  EXPECT_EQ(c.where("run.seed").line, 1);
}

TEST(Config, LaterOverrideWins) {
  Config c = Config::parse("", "t.toml", {"run.steps=50", "run.steps=60"});
  EXPECT_EQ(c.integer("run.steps"), 60);
}

TEST(Config, OverrideOfExtendedConfig) {
  TempDir dir;
  dir.write("baseline.toml", kBaseline);
  const fs::path v = dir.write("variants/v.toml",
                               "extends = \"../baseline.toml\"\n[precision]\ncompute = \"tf32\"\n");
  Config c = Config::load(v, {"precision.compute=fp16", "run.device=cuda"});
  EXPECT_EQ(c.str("precision.compute"), "fp16");
  EXPECT_EQ(c.str("run.device"), "cuda");
  EXPECT_EQ(c.integer("run.seed"), 1234);
}

// --- positive: to_toml, hash, diff --------------------------------------------------------------

TEST(Config, ToTomlRoundTripsDefaults) {
  Config c = Config::parse("", "t.toml");
  const std::string text = c.to_toml();
  EXPECT_EQ(text.rfind("[run]\n", 0), 0u) << text;
  EXPECT_EQ(text.find("# default"), std::string::npos);        // the plain form has no annotations
  EXPECT_EQ(text.find("min_speedup_pct"), std::string::npos);  // unset keys are left out
  EXPECT_NE(text.find("\n[gate]\n"), std::string::npos);
  ExpectRoundTrip(c);
}

TEST(Config, ToTomlRoundTripsEveryKind) {
  Config c = Config::parse(
      "[run]\nname = \"q\\\"uote \\\\ back\\nnew\\ttab \\u0001 \\u007f del \\u00e9\"\nseed = "
      "9007199254740991\n"
      "step_timeout_s = 1e9\n[model]\npreset = \"small\"\nn_heads = 16\n[optim]\nlr = 0.1\nmin_lr "
      "= 1e-7\neps = 5e-324\n"
      "[data]\nsource = \"tokens\"\npath = \"data/x.bin\"\n[gate]\nmin_speedup_pct = "
      "12.5\nmin_memory_saving_pct = -1e6\n",
      "t.toml");
  EXPECT_EQ(c.str("run.name"), "q\"uote \\ back\nnew\ttab \x01 \x7f del \xc3\xa9");
  ExpectRoundTrip(c);
}

TEST(Config, ToTomlRoundTripsOverridesAndExtends) {
  TempDir dir;
  dir.write("baseline.toml", kBaseline);
  const fs::path v = dir.write("variants/v.toml",
                               "extends = \"../baseline.toml\"\n[attention]\nimpl = \"fused\"\n");
  ExpectRoundTrip(Config::load(v, {"run.seed=7", "optim.warmup=0"}));
}

TEST(Config, HashIsStable) {
  const std::string text = "[run]\nseed = 3\n[optim]\nlr = 0.002\n";
  Config a = Config::parse(text, "a.toml");
  Config b = Config::parse(text, "a.toml");
  EXPECT_EQ(a.hash(), b.hash());
  ASSERT_EQ(a.hash().size(), 16u);
  EXPECT_EQ(a.hash().find_first_not_of("0123456789abcdef"), std::string::npos) << a.hash();
  // Comments, order, whitespace and how a value is spelled do not matter; the values do.
  Config c =
      Config::parse("# reordered\n[optim]\n  lr = 2e-3\n\n[run]\nseed=3\n", "elsewhere/c.toml");
  EXPECT_EQ(c.hash(), a.hash());
  EXPECT_EQ(Config::parse("", "x.toml", {"run.seed=3", "optim.lr=0.002"}).hash(), a.hash());
  // Writing a default explicitly is the same computation.
  EXPECT_EQ(Config::parse("[run]\nsteps = 200\n", "t.toml").hash(),
            Config::parse("", "t.toml").hash());
}

TEST(Config, HashIgnoresRunName) {
  Config a = Config::parse("[run]\nname = \"first\"\n", "a.toml");
  Config b = Config::parse("[run]\nname = \"second\"\n", "b.toml");
  Config unnamed = Config::parse("", "whatever.toml");
  EXPECT_NE(a.str("run.name"), b.str("run.name"));
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.hash(), unnamed.hash());
}

TEST(Config, HashChangesWithAnyValue) {
  const std::string base = Config::parse("", "t.toml").hash();
  std::set<std::string> hashes{base};
  for (const char* o : {"run.seed=1", "run.steps=201", "optim.lr=0.004", "precision.compute=bf16",
                        "attention.impl=fused", "gate.repeats=6", "faults.stall_every=3",
                        "gate.min_speedup_pct=1", "model.preset=small"}) {
    const std::string h = Config::parse("", "t.toml", {o}).hash();
    EXPECT_NE(h, base) << o;
    hashes.insert(h);
  }
  EXPECT_EQ(hashes.size(), 10u);  // all different
}

TEST(Config, NegativeZeroIsZero) {
  // diff() compares values (-0.0 == 0.0); hash() must agree with it.
  Config a = Config::parse("[optim]\nmin_lr = 0.0\n", "t.toml");
  Config b = Config::parse("[optim]\nmin_lr = -0.0\n", "t.toml");
  EXPECT_TRUE(diff(a, b).empty());
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_EQ(a.to_toml(), b.to_toml());
}

TEST(Config, DiffListsExactlyTheChangedKeys) {
  Config a = Config::parse("[run]\nseed = 1\n[model]\npreset = \"tiny\"\n", "a.toml");
  Config b = Config::parse(
      "[run]\nseed = 2\n[model]\npreset = \"tiny\"\nn_layers = 3\n[gate]\nmin_speedup_pct = 5\n"
      "[parallel]\nzero_stage = 1\n",
      "a.toml");
  std::vector<Change> d = diff(a, b);
  ASSERT_EQ(d.size(), 4u);
  // In schema order: run, model, parallel, ..., gate.
  EXPECT_EQ(d[0].key, "run.seed");
  EXPECT_EQ(d[0].before, "1");
  EXPECT_EQ(d[0].after, "2");
  EXPECT_EQ(d[0].knob, Knob::Workload);
  EXPECT_EQ(d[1].key, "model.n_layers");
  EXPECT_EQ(d[1].before, "2");
  EXPECT_EQ(d[1].after, "3");
  EXPECT_EQ(d[2].key, "parallel.zero_stage");
  EXPECT_EQ(d[2].knob, Knob::Exact);
  EXPECT_EQ(d[3].key, "gate.min_speedup_pct");
  EXPECT_EQ(d[3].before, "(unset)");
  EXPECT_EQ(d[3].after, "5.0");
  EXPECT_EQ(d[3].knob, Knob::None);
  // Symmetric, and empty against itself.
  std::vector<Change> back = diff(b, a);
  ASSERT_EQ(back.size(), 4u);
  EXPECT_EQ(back[3].before, "5.0");
  EXPECT_EQ(back[3].after, "(unset)");
  EXPECT_TRUE(diff(a, a).empty());
}

TEST(Config, FormatValue) {
  EXPECT_EQ(format_value(Value{int64_t{-3}}), "-3");
  EXPECT_EQ(format_value(Value{2.0}), "2.0");
  EXPECT_EQ(format_value(Value{3e-4}), "3e-04");  // shortest form
  EXPECT_EQ(format_value(Value{0.25}), "0.25");
  EXPECT_EQ(format_value(Value{1e21}), "1e+21");
  EXPECT_EQ(format_value(Value{true}), "true");
  EXPECT_EQ(format_value(Value{std::string("a\"b\\c\nd\x7f")}), "\"a\\\"b\\\\c\\nd\\u007f\"");
  EXPECT_EQ(format_value(Value{}), "");
}

TEST(Config, DidYouMean) {
  const std::vector<std::string> keys{"seed", "steps", "warmup_steps", "device"};
  EXPECT_EQ(did_you_mean("sed", keys), "seed");
  EXPECT_EQ(did_you_mean("seed", keys), "seed");
  EXPECT_EQ(did_you_mean("step", keys), "steps");
  EXPECT_EQ(did_you_mean("warmupsteps", keys), "warmup_steps");
  EXPECT_EQ(did_you_mean("devcie", keys), "device");
  EXPECT_EQ(did_you_mean("completely_different", keys), "");
  EXPECT_EQ(did_you_mean("xyzzy", keys), "");
  EXPECT_EQ(did_you_mean("seed", {}), "");
  EXPECT_EQ(did_you_mean("precison", {"run", "model", "precision", "parallel"}), "precision");
}

TEST(Config, TypedAccessorsRejectWrongType) {
  Config c = Config::parse("", "t.toml");
  EXPECT_THROW(c.integer("run.device"), std::logic_error);
  EXPECT_THROW(c.str("run.seed"), std::logic_error);
  EXPECT_THROW(c.value("run.nonexistent"), std::logic_error);
  EXPECT_THROW(c.number("data.path"), std::logic_error);  // no value
  EXPECT_THROW(c.fail("run.seed", "custom"), ConfigError);
}

}  // namespace
}  // namespace lockstep::config

// The config reference (docs/config.md) is exactly `lockstep config keys`: docs cannot drift from
// code.
TEST(ConfigDocs, ReadmeReferenceMatchesTheSchemas) {
  const std::string readme =
      lockstep::testing::read_text(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/config.md");
  const std::string begin = "<!-- BEGIN CONFIG KEYS -->\n", end = "<!-- END CONFIG KEYS -->";
  const auto a = readme.find(begin), b = readme.find(end);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  EXPECT_EQ(readme.substr(a + begin.size(), b - a - begin.size()),
            lockstep::config::keys_markdown())
      << "docs/config.md: regenerate with: build/lockstep config keys";
}

// The docs state each gate key's default twice: in the "Gate policy" table (docs/method.md) and in
// the generated reference (`lockstep config keys`, docs/config.md). Both must say the same
// (min_speedup_pct was "unset" in one and "(derived)" in the other); numbers compare as numbers
// ("5e-4" and "5e-04" agree).
TEST(ConfigDocs, ReadmeGatePolicyDefaultsMatchTheReference) {
  const std::string readme =
      lockstep::testing::read_text(std::string(LOCKSTEP_SOURCE_DIR) + "/docs/method.md");
  // "| `key` | ... |" rows -> cell `column` (0 = the key) of each, by key.
  auto rows = [](const std::string& text, size_t column) {
    std::map<std::string, std::string> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("| `", 0) != 0) continue;
      std::vector<std::string> cells;
      for (size_t p = 1, q; (q = line.find(" |", p)) != std::string::npos; p = q + 2)
        cells.push_back(line.substr(p + 1, q - p - 1));
      if (cells.size() > column) out[cells[0]] = cells[column];
    }
    return out;
  };
  auto same = [](std::string a, std::string b) {
    auto value = [](const std::string& s) {  // the backticked value, as a number when it is one
      const auto a = s.find('`'), b = s.find('`', a + 1);
      return a == std::string::npos ? s : s.substr(a + 1, b - a - 1);
    };
    a = value(a), b = value(b);
    char* end = nullptr;
    const double x = std::strtod(a.c_str(), &end);
    if (!a.empty() && *end == '\0') return std::strtod(b.c_str(), nullptr) == x;
    return a == b;
  };
  const auto policy_at = readme.find("## Gate policy");
  ASSERT_NE(policy_at, std::string::npos);
  const auto policy =
      rows(readme.substr(policy_at, readme.find("\n\n", readme.find("| key", policy_at)) - policy_at), 1);
  const std::string keys = lockstep::config::keys_markdown();
  const auto gate_at = keys.find("#### `[gate]`");
  ASSERT_NE(gate_at, std::string::npos);
  const auto reference = rows(keys.substr(gate_at), 2);
  ASSERT_GE(policy.size(), 8u);
  for (const auto& [key, def] : policy) {
    ASSERT_TRUE(reference.count(key)) << key;
    EXPECT_TRUE(same(def, reference.at(key)))
        << key << ": the Gate policy table says " << def << ", the reference "
        << reference.at(key);
  }
}
