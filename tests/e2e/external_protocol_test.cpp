// The trainer protocol 2 end to end (docs/protocol.md): the real binary runs a real Python trainer
// (tests/external/protocol2_trainer.py, on python/lockstep_trainer and the build's
// own Python: cli_util.h build_python_first) that
// announces turns, noise and probe, well or in one of the ways a real one goes wrong. A protocol 1
// trainer (tests/external/protocol_trainer.py) is judged as before, and the report says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_util.h"
#include "harness/runs/run_folder.h"

using lockstep::testing::line_count;
using lockstep::testing::losses;
using lockstep::testing::read_json;
using lockstep::testing::run_lockstep;
using lockstep::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const bool kBuildPythonFirst = lockstep::testing::build_python_first();

const char* kV2 = "tests/configs/external_protocol2.toml";
const char* kV1 = "tests/configs/external_protocol.toml";

std::string env(const std::string& mode, const std::string& supports = "turns,noise,probe") {
  return "external.env={ TRAINER_MODE = \"" + mode + "\", TRAINER_SUPPORTS = \"" + supports + "\" }";
}

bool has_warning(const nlohmann::json& rep, const std::string& text) {
  for (const auto& w : rep["warnings"])
    if (w.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

// The hello is read, kept in the summary, and is not a step.
TEST(Protocol2, TheHelloIsRecordedAndIsNoStep) {
  TempDir tmp;
  auto r = run_lockstep({"run", kV2, "--out", tmp / "r", "--quiet", "--no-history"}, tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto s = read_json(tmp.path() / "r" / "summary.json");
  EXPECT_EQ(s["environment"]["trainer_protocol"], "2");
  EXPECT_EQ(s["environment"]["trainer_supports"], "turns,noise,probe");
  EXPECT_EQ(losses(tmp.path() / "r" / "metrics.jsonl").size(), 12u);
}

// An approximate change between two protocol-2 arms gets the whole gate: the noise envelope (K
// runs with LOCKSTEP_WEIGHT_NOISE), the function probe at the baseline's checkpoints, and timing
// pairs that take turns; a probe drift of 2% is rejected by the probe although the loss agrees.
TEST(Protocol2, AnApproximateChangeGetsEnvelopeProbeAndTurns) {
  TempDir tmp;
  auto r = run_lockstep({"compare", kV2, kV2, "--set-variant", "gate.alignment=\"approximate\"",
                         "--set-variant", "external.env={ TRAINER_MODE = \"ok\", TRAINER_TAG = \"v\" }",
                         "--repeats", "2", "--policy", "tests/external/values_only_policy.toml",
                         "--out", tmp / "c", "--no-history"},
                        tmp.path(), 600);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["alignment"]["class"], "approximate");
  ASSERT_TRUE(rep["alignment"]["envelope"].is_object()) << rep["alignment"].dump();
  EXPECT_EQ(rep["alignment"]["envelope"]["runs"], 3);
  EXPECT_GT(rep["alignment"]["envelope"]["noise"].get<double>(), 0.0);
  EXPECT_TRUE(rep["alignment"]["seed_band"].is_null()) << rep["alignment"].dump();
  const auto& probe = rep["alignment"]["probe"];
  ASSERT_TRUE(probe.contains("steps")) << rep["alignment"].dump();
  EXPECT_EQ(probe["steps"], nlohmann::json({2, 4, 6, 8, 10})) << probe.dump();  // every 12 / 5
  EXPECT_TRUE(probe["passed"].get<bool>()) << probe.dump();
  EXPECT_EQ(rep["interleave"], "step") << rep["interleave_note"];
  EXPECT_EQ(rep["trainer_protocol"]["baseline"]["protocol"], 2);
  EXPECT_TRUE(rep["trainer_protocol"]["variant"]["lacks"].empty());
  // The envelope runs computed with the noise: their curves differ from the baseline's.
  const fs::path arms = tmp.path() / "c" / "arms";
  EXPECT_NE(losses(arms / "baseline-noise1" / "metrics.jsonl"), losses(arms / "baseline" / "metrics.jsonl"));
  // The probe's checkpoints are gone once probed; its sketches stay.
  EXPECT_FALSE(fs::exists(arms / "baseline" / "checkpoints"));
  EXPECT_TRUE(fs::exists(arms / "probe" / "variant" / "probe.bin"));
}

TEST(Protocol2, TheProbeRejectsADriftTheLossDoesNotShow) {
  TempDir tmp;
  auto r = run_lockstep({"compare", kV2, kV2, "--set-variant", "gate.alignment=\"approximate\"",
                         "--set-variant",
                         "external.command=[\"python3\", \"protocol2_trainer.py\", \"--seed\", "
                         "\"{seed}\", \"--steps\", \"{steps}\", \"--metrics\", \"{metrics}\", "
                         "\"--probe-drift\", \"0.02\"]",
                         "--repeats", "2", "--policy", "tests/external/values_only_policy.toml",
                         "--out", tmp / "c", "--no-history"},
                        tmp.path(), 600);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  const auto& probe = rep["alignment"]["probe"];
  ASSERT_TRUE(probe.contains("steps")) << rep["alignment"].dump();
  EXPECT_FALSE(probe["passed"].get<bool>()) << probe.dump();
  EXPECT_EQ(probe["at_tensor"], "layer") << probe.dump();
  // The loss alone would have passed: the trainer's loss does not see the drift.
  EXPECT_TRUE(rep["alignment"]["envelope"]["inside"].get<bool>()) << rep["alignment"].dump();
}

// A protocol-1 trainer is judged as before (seed band, repeats one after the other, no probe) and
// the report says what it lacked.
TEST(Protocol2, AProtocol1TrainerIsJudgedAsBeforeAndTheReportSaysWhy) {
  TempDir tmp;
  auto r = run_lockstep({"compare", kV1, kV1, "--set-variant", "gate.alignment=\"approximate\"",
                         "--repeats", "2", "--policy", "tests/external/values_only_policy.toml",
                         "--out", tmp / "c", "--no-history"},
                        tmp.path(), 600);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_TRUE(rep["alignment"]["seed_band"].is_object()) << rep["alignment"].dump();
  EXPECT_TRUE(rep["alignment"]["envelope"].is_null()) << rep["alignment"].dump();
  EXPECT_FALSE(rep["alignment"]["probe"].is_object() && rep["alignment"]["probe"].contains("steps"));
  EXPECT_EQ(rep["interleave"], "repeat");
  EXPECT_NE(rep["interleave_note"].get<std::string>().find("announced no turns (protocol 1)"),
            std::string::npos)
      << rep["interleave_note"];
  EXPECT_EQ(rep["trainer_protocol"]["baseline"]["protocol"], 1);
  EXPECT_EQ(rep["trainer_protocol"]["baseline"]["lacks"].size(), 3u);
  EXPECT_TRUE(has_warning(rep, "the baseline's external trainer speaks protocol 1 (metrics only) "
                               "and lacks turns, noise, probe"))
      << rep["warnings"].dump();
  EXPECT_TRUE(has_warning(rep, "judged by the seed band")) << rep["warnings"].dump();
}

// A trainer that announces turns and keeps one: its watchdog names it, its peer finishes alone,
// and the comparison ends (exit 3) instead of hanging.
TEST(Protocol2, ATrainerThatKeepsTheTurnIsNamedAndNothingHangs) {
  TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  // 15 s: more than a loaded machine's start-up of Python and torch (the watchdog counts it).
  auto r = run_lockstep({"compare", kV2, kV2, "--set-variant", env("hold_turn"), "--set-baseline",
                         "run.step_timeout_s=15", "--set-variant", "run.step_timeout_s=15",
                         "--repeats", "2", "--policy",
                         "tests/external/values_only_policy.toml", "--out", tmp / "c", "--no-history"},
                        tmp.path(), 600);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_LT(s, 300.0);  // the trainer sleeps 600 s holding the turn
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["failed_arm"], "variant");
  EXPECT_NE(rep["failure"].get<std::string>().find("without handing it back (LOCKSTEP_TURN_FD)"),
            std::string::npos)
      << rep["failure"];
  const fs::path timing = tmp.path() / "c" / "arms" / "timing";
  const auto peer = read_json(timing / "01-baseline" / "summary.json");
  EXPECT_EQ(peer["status"], "ok") << peer.dump();
  EXPECT_EQ(losses(timing / "01-baseline" / "metrics.jsonl").size(), 12u);
}

// A trainer that dies holding the turn: its peer finishes alone.
TEST(Protocol2, ATrainerThatDiesHoldingTheTurnLetsItsPeerFinish) {
  TempDir tmp;
  auto r = run_lockstep({"compare", kV2, kV2, "--set-variant", env("die_holding_turn"), "--repeats",
                         "2", "--policy", "tests/external/values_only_policy.toml", "--out",
                         tmp / "c", "--no-history"},
                        tmp.path(), 600);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["failed_arm"], "variant");
  const fs::path timing = tmp.path() / "c" / "arms" / "timing";
  EXPECT_EQ(read_json(timing / "01-baseline" / "summary.json")["status"], "ok");
  EXPECT_EQ(losses(timing / "01-baseline" / "metrics.jsonl").size(), 12u);
}

// A trainer that announces probe and writes a malformed probe file: exit 3, one line naming it.
TEST(Protocol2, AMalformedProbeFileIsExit3NamingTheFile) {
  TempDir tmp;
  auto base = run_lockstep({"run", kV2, "--set", "checkpoint.every=3", "--set", "checkpoint.keep=5",
                            "--out", tmp / "b", "--quiet", "--no-history"},
                           tmp.path());
  ASSERT_EQ(base.exit_code, 0) << base.output;
  ASSERT_TRUE(fs::exists(tmp.path() / "b" / "checkpoints" / "step-00000003"));
  auto r = run_lockstep({"run", kV2, "--set", env("bad_probe"), "--probe", tmp / "b", "--out",
                         tmp / "p", "--quiet", "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find((tmp.path() / "p" / "probe.bin").string()), std::string::npos) << r.output;
}

// What a run asks of the trainer must be what it announced: weight noise for a trainer without
// "noise" fails the run (its curve would pass for an envelope run without being one).
TEST(Protocol2, NoiseForATrainerThatDoesNotAnnounceItFailsTheRun) {
  TempDir tmp;
  auto r = run_lockstep({"run", kV2, "--set", env("ok", "turns,probe"), "--set",
                         "faults.weight_rounding_noise=0.004", "--out", tmp / "r", "--quiet",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("does not announce \"noise\""), std::string::npos) << r.output;
}

TEST(Protocol2, AMalformedHelloIsExit3NamingTheLine) {
  TempDir tmp;
  auto r = run_lockstep({"run", kV2, "--set", env("bad_hello"), "--out", tmp / "r", "--quiet",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("line 1: \"lockstep\" must be"), std::string::npos) << r.output;
}

// include/lockstep/trainer.h as a C trainer uses it (tests/external/c_trainer.cpp): its hello
// announces turns, so its timing pairs take turns, and its metrics lines read back exactly.
TEST(Protocol2, TheCHeaderTakesTurns) {
  TempDir tmp;
  const std::string cmd = std::string("external.command=[\"") + C_TRAINER +
                          "\", \"--seed\", \"{seed}\", \"--steps\", \"{steps}\", \"--metrics\", \"{metrics}\"]";
  auto r = run_lockstep({"compare", kV1, kV1, "--set-baseline", cmd, "--set-variant", cmd,
                         "--set-variant", "run.name=c2", "--repeats", "2", "--policy",
                         "tests/external/values_only_policy.toml", "--out", tmp / "c", "--no-history"},
                        tmp.path(), 600);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["trainer_protocol"]["baseline"]["supports"], nlohmann::json({"turns"}));
  EXPECT_EQ(rep["interleave"], "step") << rep["interleave_note"];
  const auto l = losses(tmp.path() / "c" / "arms" / "baseline" / "metrics.jsonl");
  ASSERT_EQ(l.size(), 12u);
  EXPECT_EQ(l[11], 4.0 / (1.0 + 0.1 * 12) + (1234 % 97) * 1e-3 + 1.0 / 3.0);  // %.17g: exact
  EXPECT_TRUE(rep["trainer_protocol"]["baseline"]["compute"].is_null()) << rep["trainer_protocol"];

  // lockstep_hello_compute declares the dtype: the run records it as the Python helper's does.
  const std::string bf16 = std::string("external.command=[\"") + C_TRAINER +
                           "\", \"--seed\", \"{seed}\", \"--steps\", \"{steps}\", \"--metrics\", "
                           "\"{metrics}\", \"--compute\", \"bf16\"]";
  r = run_lockstep({"run", kV1, "--set", bf16, "--out", tmp / "d", "--quiet", "--no-history"},
                   tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_json(tmp.path() / "d" / "summary.json")["environment"]["trainer_compute"], "bf16")
      << r.output;
}

// The trainer declares its numerics (docs/protocol.md "The compute dtype"): the hello's "compute"
// and what the helper observed ("observed_compute", a step field) are kept in the summary.
TEST(Protocol2Compute, TheDeclaredAndTheObservedDtypeAreRecorded) {
  TempDir tmp;
  auto r = run_lockstep({"run", kV2, "--set",
                         "external.env={ TRAINER_COMPUTE = \"bf16\", TRAINER_AUTOCAST = \"bf16\" }",
                         "--out", tmp / "d", "--quiet", "--no-history"},
                        tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto d = read_json(tmp.path() / "d" / "summary.json")["environment"];
  EXPECT_EQ(d["trainer_compute"], "bf16") << d.dump();
  EXPECT_FALSE(d.contains("trainer_observed_compute")) << d.dump();  // declared: not watched
  r = run_lockstep({"run", kV2, "--set", "external.env={ TRAINER_AUTOCAST = \"bf16\" }", "--out",
                    tmp / "o", "--quiet", "--no-history"},
                   tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto o = read_json(tmp.path() / "o" / "summary.json")["environment"];
  EXPECT_FALSE(o.contains("trainer_compute")) << o.dump();
  EXPECT_EQ(o["trainer_observed_compute"], "bf16") << o.dump();
  EXPECT_EQ(losses(tmp.path() / "o" / "metrics.jsonl").size(), 12u);
}

namespace {

// The variant: an external trainer switched to bf16 by its own means, declaring
// [gate] alignment = "approximate" and no [precision] compute. Its loss and its probe's output
// differ from the baseline's by 1e-3, a bf16-sized difference; `env` is what else it says.
lockstep::testing::CliResult compare_bf16_variant(const TempDir& tmp, const std::string& env) {
  return run_lockstep({"compare", kV2, kV2, "--set-variant", "gate.alignment=\"approximate\"",
                       "--set-variant",
                       "external.command=[\"python3\", \"protocol2_trainer.py\", \"--seed\", "
                       "\"{seed}\", \"--steps\", \"{steps}\", \"--metrics\", \"{metrics}\", "
                       "\"--loss-offset\", \"0.001\", \"--probe-drift\", \"0.001\"]",
                       "--set-variant", env, "--repeats", "2", "--policy",
                       "tests/external/values_only_policy.toml", "--out", tmp / "c", "--no-history"},
                      tmp.path(), 600);
}

}  // namespace

// Declared only through the hello (Session(compute="bf16")), the envelope's u is bf16's and the
// variant is aligned: the false reject (fp32's u, the probe at thousands of x) is gone.
TEST(Protocol2Compute, ABf16VariantDeclaredOnlyInTheHelloIsAligned) {
  TempDir tmp;
  auto r = compare_bf16_variant(tmp, "external.env={ TRAINER_COMPUTE = \"bf16\" }");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  const auto& e = rep["alignment"]["envelope"];
  ASSERT_TRUE(e.is_object()) << rep["alignment"].dump();
  EXPECT_EQ(e["noise"].get<double>(), 0.00390625);  // 2^-8
  EXPECT_EQ(e["noise_source"], "unit roundoff of bf16 (2^-8)");
  EXPECT_EQ(e["noise_dtype"], "bf16");
  EXPECT_EQ(e["noise_dtype_arm"], "variant");
  EXPECT_EQ(e["noise_dtype_from"], "hello");
  EXPECT_TRUE(e["inside"].get<bool>()) << e.dump();
  EXPECT_TRUE(rep["alignment"]["aligned"].get<bool>()) << rep["alignment"].dump();
  EXPECT_TRUE(rep["alignment"]["probe"]["passed"].get<bool>()) << rep["alignment"]["probe"].dump();
  EXPECT_EQ(rep["alignment"]["probe"]["noise"].get<double>(), 0.00390625);
  EXPECT_EQ(rep["trainer_protocol"]["variant"]["compute"], "bf16");
  EXPECT_TRUE(rep["trainer_protocol"]["baseline"]["compute"].is_null());
  EXPECT_FALSE(has_warning(rep, "computes in")) << rep["warnings"].dump();
  // The console and the Markdown say which u, from which dtype, from where.
  EXPECT_NE(r.output.find("unit roundoff of bf16 (2^-8): bf16, declared in the variant's hello"),
            std::string::npos)
      << r.output;
  std::ifstream md(tmp.path() / "c" / "report.md");
  const std::string markdown((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(markdown.find("bf16, declared in the variant's hello"), std::string::npos) << markdown;
}

// The same variant declaring nothing: the dtypes are equal (fp32, the default), so the u is fp32's
// and the comparison fails, as in the issue; a warning on the console and in the report names
// the u, what the helper saw and the line to add.
TEST(Protocol2Compute, ApproximateWithAnUnchangedDtypeIsWarned) {
  TempDir tmp;
  auto r = compare_bf16_variant(tmp, "external.env={ TRAINER_AUTOCAST = \"bf16\" }");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  const auto& e = rep["alignment"]["envelope"];
  EXPECT_EQ(e["noise"].get<double>(), std::ldexp(1.0, -24)) << e.dump();
  EXPECT_EQ(e["noise_dtype"], "fp32");
  EXPECT_EQ(e["noise_dtype_from"], "default");
  EXPECT_EQ(rep["trainer_protocol"]["variant"]["observed_compute"], "bf16");
  const std::string want =
      "the variant declares [gate] alignment = \"approximate\" but computes in fp32 like the "
      "baseline";
  EXPECT_TRUE(has_warning(rep, want)) << rep["warnings"].dump();
  EXPECT_TRUE(has_warning(rep, "u = 2^-24")) << rep["warnings"].dump();
  EXPECT_TRUE(has_warning(rep, "add compute = \"bf16\" under [precision] in " + std::string(kV2)))
      << rep["warnings"].dump();
  EXPECT_TRUE(has_warning(rep, "seen computing in bf16 (observed, not declared)"))
      << rep["warnings"].dump();
  EXPECT_NE(r.output.find(want), std::string::npos) << r.output;  // on the console
}
