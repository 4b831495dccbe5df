// Plugins end to end with the real binary: `lockstep variants`, implementation names in configs,
// every way a plugin can fail to load (exit 2 naming the file and the reason), kernels that fail
// at run time (exit 3 naming slot, name and step; what was written stays), and the two example
// plugins, built out of tree against the installed SDK, gated by `lockstep compare`.
#include <fstream>
#include <regex>

#include "cli_util.h"
#include "tests/fixtures/read_file.h"
#include "tests/fixtures/scoped_env.h"
#include "harness/runs/run_folder.h"
#include "harness/util/sha256.h"

using namespace lockstep::testing;

namespace {

// A config extending the baseline with `body` appended, written into the test's folder.
std::string write_config(const TempDir& tmp, const std::string& name, const std::string& body,
                         const std::string& extends = "configs/baseline.toml") {
  const std::string path = tmp / name;
  std::ofstream(path) << "extends = \"" << LOCKSTEP_SOURCE_DIR << "/" << extends << "\"\n"
                      << body;
  return path;
}

}  // namespace

// ---- listing -----------------------------------------------------------------------------------

TEST(PluginCli, VariantsListsTheBuiltInsAndAPluginsEntries) {
  TempDir tmp;
  auto r = run_lockstep({"variants"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* row : {"attention    math", "attention    fused", "activation   gelu",
                          "layer_norm   layer_norm", "optimizer    adamw", "loss         cross_entropy"})
    EXPECT_NE(r.output.find(row), std::string::npos) << row << "\n" << r.output;
  EXPECT_NE(r.output.find("built-in"), std::string::npos);
  EXPECT_EQ(r.output.find("cpu_bias_gelu"), std::string::npos);  // not without --plugin

  auto p = run_lockstep({"variants", "--plugin", FUSED_CPU_SO}, tmp.path());
  ASSERT_EQ(p.exit_code, 0) << p.output;
  for (const char* e :
       {"cpu_causal", "cpu_bias_gelu", "cpu_layer_norm", "cpu_cross_entropy", "cpu_adamw"}) {
    std::regex row(std::string("\\n\\S+ +") + e + " +(exact|approximate) +libfused_cpu\\.so +\\S");
    EXPECT_TRUE(std::regex_search(p.output, row)) << e << "\n" << p.output;
  }
  EXPECT_NE(p.output.find("[cpu only]"), std::string::npos) << p.output;
  // The plugin's identity: its path and the SHA-256 of its bytes.
  EXPECT_NE(p.output.find("plugin " + std::string(FUSED_CPU_SO) + "  sha256 " +
                          lockstep::util::sha256_file(FUSED_CPU_SO)),
            std::string::npos)
      << p.output;
}

// ---- config errors -----------------------------------------------------------------------------

TEST(PluginCli, AnUnknownNameIsAConfigErrorListingTheRegisteredNames) {
  TempDir tmp;
  const auto cfg = write_config(tmp, "typo.toml", "[model]\nactivation = \"gleu\"\n");
  auto r = run_lockstep({"config", "show", cfg}, tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(cfg + ":3:1: model.activation: \"gleu\" is not a registered activation "
                                "(registered: gelu) (did you mean \"gelu\"?)"),
            std::string::npos)
      << r.output;
  // With the plugin loaded its names are registered too, and suggested.
  const auto cfg2 = write_config(tmp, "typo2.toml",
                                 "[plugins]\nload = [\"" + std::string(FUSED_CPU_SO) +
                                     "\"]\n[optim]\nimpl = \"cpu_adamv\"\n");
  auto r2 = run_lockstep({"config", "show", cfg2}, tmp.path());
  EXPECT_EQ(r2.exit_code, 2) << r2.output;
  EXPECT_NE(r2.output.find("optim.impl: \"cpu_adamv\" is not a registered optimizer (registered: "
                           "adamw, fused, cpu_adamw) (did you mean \"cpu_adamw\"?)"),
            std::string::npos)
      << r2.output;
  // A plugin's names exist only for the configs that load it.
  const auto cfg3 = write_config(tmp, "unloaded.toml", "[optim]\nimpl = \"cpu_adamw\"\n");
  auto r3 = run_lockstep({"run", cfg3, "--out", tmp / "r3"}, tmp.path());
  EXPECT_EQ(r3.exit_code, 2) << r3.output;
  EXPECT_NE(r3.output.find("optim.impl: \"cpu_adamw\" is not a registered optimizer"),
            std::string::npos)
      << r3.output;
}

TEST(PluginCli, AnEntryRefusesADeviceItDoesNotRunOn) {
  TempDir tmp;
  const auto cfg = write_config(tmp, "cuda.toml",
                                "[run]\ndevice = \"cuda\"\n[plugins]\nload = [\"" +
                                    std::string(FUSED_CPU_SO) +
                                    "\"]\n[optim]\nimpl = \"cpu_adamw\"\n");
  auto r = run_lockstep({"config", "show", cfg}, tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(cfg + ":7:1: optim.impl: \"cpu_adamw\" (from " +
                          std::string(FUSED_CPU_SO) +
                          ") runs on cpu only, not on run.device = \"cuda\""),
            std::string::npos)
      << r.output;
}

TEST(PluginCli, PluginPathsAreRelativeToTheConfigAndPinnedByTheirHash) {
  TempDir tmp;
  std::filesystem::copy_file(FUSED_CPU_SO, tmp.path() / "libk.so");
  const auto cfg = write_config(tmp, "rel.toml", "[plugins]\nload = [\"libk.so\"]\n[model]\n"
                                                 "activation = \"cpu_bias_gelu\"\n");
  auto r = run_lockstep({"config", "show", cfg, "--plain"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string abs = (tmp.path() / "libk.so").string();
  EXPECT_NE(r.output.find("load = [\"" + abs + "\"]"), std::string::npos) << r.output;
  // The build is part of the effective config (and its hash).
  EXPECT_NE(r.output.find("sha256 = [\"" + lockstep::util::sha256_file(abs) + "\"]"),
            std::string::npos)
      << r.output;
  auto d = run_lockstep({"config", "diff", "configs/baseline.toml", cfg}, tmp.path());
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("model.activation: \"gelu\" -> \"cpu_bias_gelu\""), std::string::npos)
      << d.output;
  EXPECT_NE(d.output.find("plugins, A: none"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("plugins, B: " + abs + " (sha256 "), std::string::npos) << d.output;
  // A run folder pins the build: resuming after the plugin was rebuilt is refused.
  ASSERT_EQ(run_lockstep({"run", cfg, "--steps", "12", "--stop-after", "6", "--set",
                          "checkpoint.every=3", "--out", tmp / "r", "--quiet", "--no-history"},
                         tmp.path())
                .exit_code,
            0);
  std::ofstream(tmp.path() / "libk.so", std::ios::app) << "rebuilt";
  auto resumed = run_lockstep({"run", "--resume", tmp / "r", "--quiet", "--no-history"}, tmp.path());
  EXPECT_EQ(resumed.exit_code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find("plugins.sha256: " + abs + " has sha256 " +
                                lockstep::util::sha256_file(abs) + ", the config pins "),
            std::string::npos)
      << resumed.output;
}

// ---- load failures: exit 2, one line naming the file and the reason ----------------------------

TEST(PluginCli, EveryLoadFailureIsAOneLineConfigErrorNamingFileAndReason) {
  TempDir tmp;
  auto expect = [&](const std::string& file, const std::string& reason, const char* init_mode) {
    std::optional<ScopedEnv> env;
    if (init_mode) env.emplace("LOCKSTEP_TEST_PLUGIN_INIT", init_mode);
    const auto cfg = write_config(tmp, "p.toml", "[plugins]\nload = [\"" + file + "\"]\n");
    auto r = run_lockstep({"run", cfg, "--out", tmp / "never", "--quiet"}, tmp.path());
    EXPECT_EQ(r.exit_code, 2) << file << "\n" << r.output;
    const std::string want = cfg + ":3:1: plugins.load: " + file + ": " + reason;
    EXPECT_NE(r.output.find(want), std::string::npos) << "want: " << want << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;  // one line
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "never" / "config.toml"));
  };
  expect(tmp / "missing.so", "no such file", nullptr);
  expect(NOT_A_PLUGIN_SO, "no entry point: it does not export extern \"C\" void "
                          "lockstep_plugin_init(lockstep::plugin::Registry&)", nullptr);
  expect(WRONG_ABI_SO, "built against plugin ABI 999, this lockstep has plugin ABI 1", nullptr);
  expect(MISBEHAVING_SO, "lockstep_plugin_init threw: deliberate init failure", "throw");
  expect(MISBEHAVING_SO, "registers layer_norm \"wrong_shape\" twice", "duplicate");
  expect(MISBEHAVING_SO, "registers attention \"math\", which is a built-in name", "builtin");
  {
    std::ofstream(tmp / "garbage.so") << "not an ELF file";
    expect(tmp / "garbage.so", "cannot load: ", nullptr);
  }
  // `variants --plugin` refuses the same way (exit 2).
  auto v = run_lockstep({"variants", "--plugin", WRONG_ABI_SO}, tmp.path());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find("built against plugin ABI 999, this lockstep has plugin ABI 1"),
            std::string::npos)
      << v.output;
}

// ---- kernels failing at run time: exit 3 naming slot, name and step; nothing written is lost ---

TEST(PluginRun, AKernelThatThrowsFailsTheRunNamingSlotNameAndStep) {
  TempDir tmp;
  const auto cfg = write_config(tmp, "throws.toml",
                                "[plugins]\nload = [\"" + std::string(MISBEHAVING_SO) +
                                    "\"]\n[model]\nloss = \"throws_at_step_3\"\n");
  auto r = run_lockstep({"run", cfg, "--steps", "12", "--out", tmp / "r", "--quiet",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("loss \"throws_at_step_3\" (from " + std::string(MISBEHAVING_SO) +
                          ") threw: deliberate failure in the loss kernel at step 3"),
            std::string::npos)
      << r.output;
  const auto recs = lockstep::runs::read_metrics(tmp.path() / "r" / "metrics.jsonl");
  ASSERT_EQ(recs.size(), 2u);  // steps 1 and 2, intact
  EXPECT_TRUE(std::isfinite(recs[1].loss));
  auto s = read_json(tmp.path() / "r" / "summary.json");
  EXPECT_EQ(s["status"], "failed");
  EXPECT_EQ(s["failed_step"], 3);
  ASSERT_EQ(s["plugins"].size(), 1u);
  EXPECT_EQ(s["plugins"][0]["file"], MISBEHAVING_SO);
  EXPECT_EQ(s["plugins"][0]["sha256"], lockstep::util::sha256_file(MISBEHAVING_SO));
}

TEST(PluginRun, AKernelReturningTheWrongShapeFailsTheRun) {
  TempDir tmp;
  const auto cfg = write_config(tmp, "shape.toml",
                                "[plugins]\nload = [\"" + std::string(MISBEHAVING_SO) +
                                    "\"]\n[model]\nlayer_norm = \"wrong_shape\"\n");
  auto r = run_lockstep({"run", cfg, "--steps", "12", "--out", tmp / "r", "--quiet",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("layer_norm \"wrong_shape\" (from " + std::string(MISBEHAVING_SO) +
                          ") returned shape [8, 64, 127], expected [8, 64, 128] at step 1"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_json(tmp.path() / "r" / "summary.json")["status"], "failed");
}

// ---- the examples, gated -----------------------------------------------------------------------

// bf16 baseline vs bf16 + the fused CPU kernels: the same math up to rounding (the seed band),
// every repeat reproducible, the plugin named with its hash. The timing bounds are the tests'
// lenient ones; the speed-up itself is measured in bench/RESULTS.md.
TEST(PluginCompare, FusedCpuAlignsAndNamesThePluginBuild) {
  TempDir tmp;
  const auto variant = write_config(tmp, "fused.toml",
                                    "[run]\nname = \"fused_cpu\"\n[plugins]\nload = [\"" +
                                        std::string(FUSED_CPU_SO) +
                                        "\"]\n[attention]\nimpl = \"cpu_causal\"\n"
                                        "[model]\nactivation = \"cpu_bias_gelu\"\n"
                                        "layer_norm = \"cpu_layer_norm\"\nloss = "
                                        "\"cpu_cross_entropy\"\n[optim]\nimpl = \"cpu_adamw\"\n",
                                    "configs/variants/bf16.toml");
  auto r = run_lockstep({"compare", "configs/variants/bf16.toml", variant, "--steps", "40",
                         "--policy", "tests/configs/timing_lenient_policy.toml", "--out",
                         tmp / "c"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["alignment"]["class"], "approximate");
  EXPECT_TRUE(rep["alignment"]["aligned"].get<bool>()) << rep["alignment"];
  EXPECT_TRUE(rep["determinism"]["variant_ok"].get<bool>()) << rep["determinism"];
  const auto knobs = rep["changed_knobs"];
  EXPECT_EQ(knobs, nlohmann::json::array({"model.activation", "model.layer_norm", "model.loss",
                                          "optim.impl", "attention.impl"}));
  ASSERT_EQ(rep["variant"]["plugins"].size(), 1u);
  EXPECT_EQ(rep["variant"]["plugins"][0]["sha256"], lockstep::util::sha256_file(FUSED_CPU_SO));
  EXPECT_EQ(rep["baseline"]["plugins"].size(), 0u);
  EXPECT_NE(read_text(tmp.path() / "c" / "report.md")
                .find("(sha256 " + lockstep::util::sha256_file(FUSED_CPU_SO) + ")"),
            std::string::npos);
  // The history keeps the build: the comparison's record carries the report with the hash.
  auto h = run_lockstep({"history", "export", "--format", "json"}, tmp.path());
  ASSERT_EQ(h.exit_code, 0) << h.output;
  EXPECT_NE(h.output.find(lockstep::util::sha256_file(FUSED_CPU_SO)), std::string::npos);
}

// The deliberately wrong attention (its causal mask off by one) declares itself exact: rejected
// by kernel conformance before any run starts (issue 35), exit 1, never trained nor timed, the
// case that exposed it named. (Before conformance existed, the loss alignment and the function
// probe caught it 30 steps in; the probe's own detection is compare_probe_catches_drift's.)
TEST(PluginCompare, BuggyExactPluginIsRejectedBeforeAnyRun) {
  TempDir tmp;
  const auto variant =
      write_config(tmp, "buggy.toml",
                   "[run]\nname = \"buggy\"\n[plugins]\nload = [\"" + std::string(BUGGY_SO) +
                       "\"]\n[attention]\nimpl = \"sees_next_token\"\n");
  auto r = run_lockstep({"compare", "configs/baseline.toml", variant, "--steps", "30", "--out",
                         tmp / "c"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_FALSE(rep["timed"].get<bool>());
  ASSERT_EQ(rep["checks"].size(), 1u) << rep["checks"].dump();
  EXPECT_EQ(rep["checks"][0]["name"], "kernel conformance");
  EXPECT_FALSE(rep["checks"][0]["passed"].get<bool>());
  EXPECT_NE(rep["checks"][0]["detail"].get<std::string>().find("attention \"sees_next_token\": case "),
            std::string::npos)
      << rep["checks"][0]["detail"];
  EXPECT_FALSE(rep["conformance"]["passed"].get<bool>());
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "c" / "arms" / "baseline"));
  // The Markdown report shows the failing rows.
  EXPECT_NE(read_text(tmp.path() / "c" / "report.md").find("**Kernel conformance**"), std::string::npos);
}
