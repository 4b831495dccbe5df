// External trainers end to end: the real binary runs real Python trainers as arms
// ([external] command). tests/external/protocol_trainer.py speaks the metrics protocol, well or in
// one of the ways a real trainer goes wrong ($TRAINER_MODE, set through external.env), with a
// loss that is a known function of seed and step; examples/external/train.py is a nanoGPT-style
// run on the build's own Python (cli_util.h build_python_first: Debian's python3-torch for the
// Debian build, the venv's torch 2.11 for the wheel build); `lockstep run` itself is an external trainer too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "cli_util.h"
#include "harness/runs/run_folder.h"
#include "harness/util/files.h"
#include "tests/fixtures/read_file.h"

using lockstep::testing::CliResult;
using lockstep::testing::line_count;
using lockstep::testing::losses;
using lockstep::testing::read_json;
using lockstep::testing::read_text;
using lockstep::testing::run_lockstep;
using lockstep::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const bool kBuildPythonFirst = lockstep::testing::build_python_first();

const char* kProtocol = "tests/configs/external_protocol.toml";

// protocol_trainer.py's loss, computed the same way (IEEE doubles in both languages).
double trainer_loss(int64_t seed, int64_t step) {
  return 4.0 / (1.0 + 0.1 * static_cast<double>(step)) + static_cast<double>(seed % 97) * 1e-3 +
         1.0 / 3.0;
}

std::string mode(const std::string& m) {
  return "external.env={ TRAINER_MODE = \"" + m + "\" }";
}

// A failed external run: exit 3, one line on stdout+stderr (--quiet) saying what went wrong, a
// summary.json with that status, and every step that was good before it kept in metrics.jsonl
// (and the trainer's own file kept as it wrote it).
void ExpectFailedRun(const CliResult& r, const fs::path& out, const std::string& status,
                     const std::string& message, size_t good_steps, bool started = true) {
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("lockstep: run failed: ", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  const auto s = read_json(out / "summary.json");
  EXPECT_EQ(s["status"], status);
  EXPECT_NE(s["failure"].get<std::string>().find(message), std::string::npos) << s["failure"];
  const auto recs = lockstep::runs::read_metrics(out / "metrics.jsonl");
  ASSERT_EQ(recs.size(), good_steps);
  for (size_t i = 0; i < recs.size(); ++i) {
    if (std::isfinite(recs[i].loss)) {
      EXPECT_EQ(recs[i].loss, trainer_loss(1234, recs[i].step));
    }
  }
  EXPECT_EQ(fs::exists(out / "external" / "metrics.jsonl"), started);
  EXPECT_TRUE(fs::exists(out / "config.toml"));
}

}  // namespace

// ---- the protocol and the run folder -----------------------------------------------------------

TEST(ExternalRun, TheTrainersLinesBecomeANormalRunFolder) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--out", tmp / "a", "--quiet", "--no-history",
                         "--export-losses", tmp / "a.loss"},
                        tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  const auto recs = lockstep::runs::read_metrics(tmp.path() / "a" / "metrics.jsonl");
  ASSERT_EQ(recs.size(), 12u);
  for (const auto& rec : recs) {
    EXPECT_EQ(rec.loss, trainer_loss(1234, rec.step)) << rec.step;  // bitwise: JSON is lossless
    EXPECT_EQ(rec.timed, rec.step > 2) << rec.step;  // run.warmup_steps = 2: never timed
    EXPECT_EQ(rec.tokens, 64);
    EXPECT_EQ(rec.step_ms, 1.0 + static_cast<double>(rec.step % 3));
    EXPECT_EQ(rec.phase_ms.at("forward"), 0.25);
  }
  const auto s = read_json(tmp.path() / "a" / "summary.json");
  EXPECT_EQ(s["status"], "ok");
  EXPECT_EQ(s["steps"], 12);
  EXPECT_EQ(s["timed_steps"], 10);
  double ms = 0;  // steps 3..12: step_ms = 1 + step % 3
  for (int step = 3; step <= 12; ++step) ms += 1.0 + step % 3;
  EXPECT_DOUBLE_EQ(s["tokens_per_sec"].get<double>(), 640.0 / (ms / 1000.0));
  EXPECT_EQ(s["peak_memory_bytes"], 12000);  // the largest the trainer reported
  EXPECT_GT(s["peak_rss_bytes"].get<int64_t>(), 0);  // the trainer process's own
  EXPECT_EQ(s["mfu"], "unknown");                    // no external.flops_per_token
  EXPECT_EQ(s["environment"]["trainer"], "external");
  EXPECT_NE(s["environment"]["external_command"].get<std::string>().find(
                "protocol_trainer.py --seed 1234 --steps 12 --metrics /"),
            std::string::npos);
  // The trainer ran in external.workdir (relative to the config file) with its env, the
  // placeholders expanded there too; the trainer's own asserts checked LOCKSTEP_METRICS and
  // LOCKSTEP_SEED against {metrics} and {seed}.
  const std::string log = read_text(tmp.path() / "a" / "external" / "trainer.log");
  EXPECT_NE(log.find("mode ok cwd " + (fs::path(LOCKSTEP_SOURCE_DIR) / "tests" / "external").string() +
                     " tag seed-1234"),
            std::string::npos)
      << log;
  // The effective config keeps the placeholders; the export has every step.
  EXPECT_NE(read_text(tmp.path() / "a" / "config.toml").find("\"--seed\", \"{seed}\""),
            std::string::npos);
  // (a golden file of format 2: its header lines start with '#'; docs/golden.md)
  const std::string golden = read_text(tmp / "a.loss");
  std::istringstream lines(golden);
  std::string line;
  size_t steps = 0;
  while (std::getline(lines, line))
    if (!line.empty() && line[0] != '#') ++steps;
  EXPECT_EQ(steps, 12u) << golden;
  // An external trainer's runs are not perturbed here: no envelope (compare falls back to the band).
  EXPECT_EQ(golden.find("# envelope_runs"), std::string::npos) << golden;
  // Same config, same seed: the same curve (and another seed another one).
  auto b = run_lockstep({"run", kProtocol, "--out", tmp / "b", "--quiet", "--no-history", "--set",
                         "run.seed=7", "--steps", "5"},
                        tmp.path());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto bl = losses(tmp.path() / "b" / "metrics.jsonl");
  ASSERT_EQ(bl.size(), 5u);
  EXPECT_EQ(bl[4], trainer_loss(7, 5));
}

// --stop-after (each timing repeat of a comparison): the trainer gets the whole schedule as
// {steps} and is stopped, with its process group, once it has written that step.
TEST(ExternalRun, StopAfterStopsTheTrainerAtThatStep) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--steps", "40", "--stop-after", "4", "--set",
                         mode("slow"), "--out", tmp / "a", "--quiet", "--no-history"},
                        tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(losses(tmp.path() / "a" / "metrics.jsonl").size(), 4u);
  EXPECT_EQ(read_json(tmp.path() / "a" / "summary.json")["status"], "ok");
  // 0.2 s per step: had it not been stopped it would have written all 40 (7 s more).
  EXPECT_LT(line_count(read_text(tmp.path() / "a" / "external" / "metrics.jsonl")), 40u);
  EXPECT_NE(read_json(tmp.path() / "a" / "summary.json")["environment"]["external_command"]
                .get<std::string>()
                .find("--steps 40"),
            std::string::npos);
}

// ---- bad input: one line, exit 3, the partial metrics kept --------------------------------------

TEST(ExternalBadInput, CommandNotFound) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", "external.command=[\"lockstep-no-such-trainer\"]",
                         "--out", tmp / "a", "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed",
                  "command not found: \"lockstep-no-such-trainer\" (not an executable in PATH)", 0,
                  /*started=*/false);
}

TEST(ExternalBadInput, NonZeroExitNamesTheCodeTheStepAndItsLastWords) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("exit_nonzero"), "--out", tmp / "a",
                         "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed",
                  "external trainer failed (exit code 7) after step 3: protocol_trainer: CUDA "
                  "error: an illegal memory access was encountered",
                  3);
}

TEST(ExternalBadInput, MalformedLineNamesItsNumber) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("malformed"), "--out", tmp / "a",
                         "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed",
                  (tmp.path() / "a" / "external" / "metrics.jsonl").string() +
                      "): line 3: not JSON",
                  2);
}

TEST(ExternalBadInput, MissingRequiredField) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("missing_field"), "--out", tmp / "a",
                         "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed", "line 2: missing required field \"step_ms\"", 1);
}

TEST(ExternalBadInput, StepsOutOfOrder) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("out_of_order"), "--out", tmp / "a",
                         "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed",
                  "line 3: step 4 after step 2: steps must come in order", 2);
}

TEST(ExternalBadInput, FewerStepsThanAsked) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("fewer_steps"), "--out", tmp / "a",
                         "--quiet", "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "failed",
                  "external trainer exited 0 after step 10 of 12: fewer steps than asked", 10);
}

// The watchdog: a trainer that stops writing (it sleeps 600 s after step 2) is stopped after
// run.step_timeout_s without a line, as a hang.
TEST(ExternalBadInput, TrainerThatStopsWritingIsAHang) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("stall"), "--set",
                         "run.step_timeout_s=3", "--out", tmp / "a", "--quiet", "--no-history"},
                        tmp.path(), 300);
  ExpectFailedRun(r, tmp.path() / "a", "hang",
                  "watchdog: the external trainer wrote no step for", 2);
  EXPECT_NE(r.output.find("(limit 3 s, run.step_timeout_s); last step 2 of 12"), std::string::npos)
      << r.output;
}

TEST(ExternalBadInput, NonFiniteLossStopsTheRun) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set", mode("nan"), "--out", tmp / "a", "--quiet",
                         "--no-history"},
                        tmp.path());
  ExpectFailedRun(r, tmp.path() / "a", "nonfinite",
                  "external trainer: non-finite loss at step 4 (metrics line 4)", 4);
  EXPECT_EQ(read_json(tmp.path() / "a" / "summary.json")["failed_step"], 4);
}

// Config problems are exit 2 and write nothing.
TEST(ExternalBadInput, ConfigProblemsExit2AndWriteNothing) {
  TempDir tmp;
  auto r = run_lockstep({"run", kProtocol, "--set",
                         "external.command=[\"python3\", \"t.py\", \"{steps}\", \"{seeds}\"]",
                         "--out", tmp / "a", "--quiet", "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(line_count(r.output), 1u) << r.output;
  EXPECT_NE(r.output.find("external.command: unknown placeholder {seeds} (did you mean {seed}?)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(tmp.path() / "a"));
  auto n = run_lockstep({"run", kProtocol, "--nproc", "2", "--out", tmp / "b", "--quiet",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(n.exit_code, 2) << n.output;
  EXPECT_NE(n.output.find("--nproc 2: parallel.world_size: an external trainer is one process"),
            std::string::npos)
      << n.output;
  EXPECT_FALSE(fs::exists(tmp.path() / "b"));
}

// ---- downstream: compare and bisect read external arms unchanged ---------------------------------

// One arm fails: exit 3, the report names the arm and why; the other arm's results and the failed
// arm's partial metrics stay in arms/.
TEST(ExternalCompare, AFailedArmKeepsTheOtherArmsResults) {
  TempDir tmp;
  auto r = run_lockstep({"compare", kProtocol, kProtocol, "--set-variant", mode("exit_nonzero"),
                         "--out", tmp / "c", "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["failed_arm"], "variant");
  EXPECT_NE(rep["failure"].get<std::string>().find("exit code 7) after step 3"), std::string::npos)
      << rep["failure"];
  EXPECT_EQ(rep["alignment"]["class"], "exact");  // an external arm, nothing declared
  const fs::path arms = tmp.path() / "c" / "arms";
  EXPECT_EQ(read_json(arms / "baseline" / "summary.json")["status"], "ok");
  EXPECT_EQ(losses(arms / "baseline" / "metrics.jsonl").size(), 12u);
  EXPECT_EQ(losses(arms / "variant" / "metrics.jsonl").size(), 3u);
  EXPECT_TRUE(fs::exists(tmp.path() / "c" / "report.html"));
}

// Two changes in one variant: bisect tries each alone and names the command-line flag that moved
// the loss; the environment change alone is exact and passes (its timing verdict is decided by the
// step times the trainer reports, which are the same in both arms). --set carries the list and
// the table values through each trial.
TEST(ExternalBisect, NamesTheChangedKeyThatBreaksAlignment) {
  TempDir tmp;
  auto r = run_lockstep({"bisect", kProtocol, "tests/configs/external_two_changes.toml", "--repeats",
                         "5", "--policy", "tests/configs/timing_lenient_policy.toml", "--out",
                         tmp / "b"},
                        tmp.path(), 900);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("culprit(s): external.command"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("culprit(s): external.env"), std::string::npos) << r.output;
  const auto alone_env = read_json(tmp.path() / "b" / "alone-2" / "report.json");
  EXPECT_EQ(alone_env["verdict"], "pass") << alone_env.dump();
  EXPECT_EQ(alone_env["alignment"]["abs_diff"], 0.0);
  EXPECT_TRUE(alone_env["determinism"]["baseline_ok"].get<bool>());
  const auto alone_cmd = read_json(tmp.path() / "b" / "alone-1" / "report.json");
  EXPECT_FALSE(alone_cmd["alignment"]["aligned"].get<bool>());
  EXPECT_NEAR(alone_cmd["alignment"]["abs_diff"].get<double>(), 0.01, 1e-12);
}

// `lockstep run` is a training program too: as an external command it gives the built-in arm's
// loss curve bit for bit, through its metrics.jsonl, Lockstep's reader and the run folder.
TEST(ExternalRun, LockstepRunAsAnExternalCommandGivesTheSameCurve) {
  TempDir tmp;
  const std::string base = std::string(LOCKSTEP_SOURCE_DIR) + "/configs/baseline.toml";
  auto builtin = run_lockstep({"run", "configs/baseline.toml", "--steps", "30", "--out",
                               tmp / "builtin", "--quiet", "--no-history"},
                              tmp.path());
  ASSERT_EQ(builtin.exit_code, 0) << builtin.output;
  // {out}/external is the folder {metrics} lies in: the inner run writes its metrics.jsonl there.
  const std::string command = std::string("external.command=[\"") + LOCKSTEP_BIN + "\", \"run\", \"" +
                              base +
                              "\", \"--steps\", \"{steps}\", \"--set\", \"run.seed={seed}\", "
                              "\"--out\", \"{out}/external\", \"--quiet\", \"--no-history\"]";
  auto ext = run_lockstep({"run", "configs/baseline.toml", "--steps", "30", "--set", command,
                           "--out", tmp / "ext", "--quiet", "--no-history"},
                          tmp.path());
  ASSERT_EQ(ext.exit_code, 0) << ext.output;
  const auto a = losses(tmp.path() / "builtin" / "metrics.jsonl");
  const auto b = losses(tmp.path() / "ext" / "metrics.jsonl");
  ASSERT_EQ(a.size(), 30u);
  ASSERT_EQ(b.size(), 30u);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "step " << i + 1;  // bitwise
  EXPECT_EQ(read_json(tmp.path() / "ext" / "summary.json")["environment"]["trainer"], "external");
}

// ---- the example: a nanoGPT-style trainer on the build's torch, fp32 vs bf16 --------------------

// `compare examples/external/baseline.toml VARIANT --steps 30` into tmp/c under the values-only
// policy (the timing checks run with bounds no measurement can cross, so the verdict is the
// alignment's): an approximate variant of train.py judged with the whole gate, and passing it (the
// class it declared, the noise envelope, the function probe, timing pairs that take turns).
// Returns report.json.
static nlohmann::json compare_passes_whole_gate(const TempDir& tmp, const std::string& variant) {
  auto r = run_lockstep({"compare", "examples/external/baseline.toml", variant, "--steps", "30",
                         "--policy", "tests/external/values_only_policy.toml", "--out", tmp / "c",
                         "--no-history"},
                        tmp.path(), 1200);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["verdict"], "pass") << r.output;
  const std::string& output = r.output;
  EXPECT_EQ(rep["alignment"]["class"], "approximate");
  EXPECT_TRUE(rep["alignment"]["envelope"].is_object() &&
              rep["alignment"]["envelope"].value("inside", false))
      << output;
  EXPECT_TRUE(rep["alignment"]["probe"].contains("steps") &&
              rep["alignment"]["probe"].value("passed", false))
      << rep["alignment"].dump();
  EXPECT_EQ(rep["interleave"], "step") << rep["interleave_note"];
  return rep;
}

// The values of the report, not its timings: the timing checks run with bounds no measurement can
// cross (tests/external/values_only_policy.toml), so the verdict is the alignment's.
TEST(ExternalExample, Fp32AgainstBf16ThroughACompare) {
  TempDir tmp;
  // The class the variant declared ([gate] alignment = "approximate", taken with --policy's
  // other keys from the variant since the policy file leaves it unset), judged with the whole
  // gate: train.py speaks the trainer protocol 2 (python/lockstep_trainer), so the noise
  // envelope, the function probe and timing pairs that take turns (docs/protocol.md).
  const auto rep = compare_passes_whole_gate(tmp, "examples/external/bf16.toml");
  EXPECT_EQ(rep["trainer_protocol"]["baseline"]["protocol"], 2);
  EXPECT_TRUE(rep["trainer_protocol"]["variant"]["lacks"].empty());
  EXPECT_EQ(rep["alignment"]["envelope"]["runs"], 3);
  // bf16 rounds differently: not the same curve, but close to it.
  const fs::path arms = tmp.path() / "c" / "arms";
  const auto b = losses(arms / "baseline" / "metrics.jsonl"),
             v = losses(arms / "variant" / "metrics.jsonl");
  ASSERT_EQ(b.size(), 30u);
  ASSERT_EQ(v.size(), 30u);
  EXPECT_NE(b, v);
  EXPECT_LT(std::fabs(b.back() - v.back()), 0.05);
  EXPECT_LT(b.back(), b.front() - 0.5);  // it learns: from ~ln(128) = 4.85
  EXPECT_EQ(rep["alignment"]["baseline_loss"].get<double>(), b.back());  // report = arm, exactly
  EXPECT_EQ(rep["alignment"]["variant_loss"].get<double>(), v.back());
  // Determinism: each timing repeat re-ran the trainer's first steps bit for bit.
  EXPECT_TRUE(rep["determinism"]["baseline_ok"].get<bool>()) << rep["determinism"].dump();
  EXPECT_TRUE(rep["determinism"]["variant_ok"].get<bool>()) << rep["determinism"].dump();
  EXPECT_EQ(rep["baseline"]["tokens_per_sec_repeats"].size(), 5u);
  bool command_changed = false;
  for (const auto& k : rep["changed_knobs"]) command_changed |= k == "external.command";
  EXPECT_TRUE(command_changed) << rep["changed_knobs"];
  // MFU from external.flops_per_token, each arm against its dtype's peak.
  const auto sb = read_json(arms / "baseline" / "summary.json");
  EXPECT_EQ(sb["flops_per_token"], 698880.0);
  EXPECT_TRUE(sb["mfu"].is_number()) << sb.dump();
  EXPECT_EQ(sb["environment"]["trainer"], "external");
  for (const char* f : {"report.json", "report.md", "report.html", "junit.xml"})
    EXPECT_TRUE(fs::exists(tmp.path() / "c" / f)) << f;
  // The report of external arms renders in a real browser with no console errors.
  auto st = lockstep::util::wait_for(
      lockstep::util::spawn(
          {"/bin/bash", std::string(LOCKSTEP_SOURCE_DIR) + "/tests/browser/check-html.sh",
           tmp / "c/report.html", tmp / "c/report.png"},
          tmp.path() / "browser.log"),
      120);
  EXPECT_EQ(st.code, 0) << lockstep::util::last_nonempty_line(tmp.path() / "browser.log");
}

// docs/extending.md "An external trainer" shows examples/external/minimal.py verbatim, and it runs.
TEST(ExternalExample, TheReadmesMinimalTrainerIsTheOneThatRuns) {
  const std::string readme = read_text(fs::path(LOCKSTEP_SOURCE_DIR) / "docs/extending.md");
  const std::string script = read_text(fs::path(LOCKSTEP_SOURCE_DIR) / "examples/external/minimal.py");
  ASSERT_GT(line_count(script), 15u);
  EXPECT_NE(readme.find("```python\n" + script + "```"), std::string::npos)
      << "docs/extending.md's example trainer differs from examples/external/minimal.py";
  TempDir tmp;
  auto r = run_lockstep({"run", "examples/external/minimal.toml", "--out", tmp / "a", "--quiet",
                         "--no-history"},
                        tmp.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto l = losses(tmp.path() / "a" / "metrics.jsonl");
  ASSERT_EQ(l.size(), 50u);
  EXPECT_LT(l.back(), 0.5 * l.front());
}

// ---- the probe sees ops, not only modules (issue 54) --------------------------------------------

// examples/external/inline_attention.py writes its attention inline (torch.matmul, F.softmax) and
// names nothing for the probe (no lt.record): the helper's op records are all that sees the
// scores. Values only (values_only_policy.toml), 2 timing repeats: the alignment is the verdict.
static nlohmann::json compare_inline(const TempDir& tmp, const std::string& variant, int expect_exit) {
  auto r = run_lockstep({"compare", "examples/external/inline.toml", variant, "--repeats", "2",
                         "--policy", "tests/external/values_only_policy.toml", "--out", tmp / "c",
                         "--no-history"},
                        tmp.path(), 900);
  EXPECT_EQ(r.exit_code, expect_exit) << r.output;
  return read_json(tmp.path() / "c" / "report.json");
}

// A 2% attention-logit drift under bf16: the loss cannot tell it from bf16's rounding (inside the
// envelope), the probe rejects it at the attention weights the inline F.softmax returned, the
// first tensor outside in forward order (q, k and v before it are inside).
TEST(ExternalInline, ADriftInInlineAttentionIsRejectedAtItsOpRecord) {
  TempDir tmp;
  const auto rep = compare_inline(tmp, "examples/external/inline-bf16-drift.toml", 1);
  EXPECT_EQ(rep["verdict"], "fail");
  EXPECT_TRUE(rep["alignment"]["envelope"].value("inside", false)) << rep["alignment"].dump();
  const auto& probe = rep["alignment"]["probe"];
  ASSERT_TRUE(probe.contains("steps")) << rep["alignment"].dump();
  EXPECT_FALSE(probe["passed"].get<bool>());
  EXPECT_GE(probe["ratio_max"].get<double>(), 5.0) << probe["at_tensor"];
  const std::string at = probe["at_tensor"];
  EXPECT_EQ(at.substr(at.size() - std::string(".attn.softmax").size()), ".attn.softmax") << at;
  EXPECT_EQ(probe["first_outside"]["tensor"], "blocks.0.attn.softmax") << probe["first_outside"];
}

// Correct bf16 is aligned with the op records in the probe (each layer's scores, weights and
// their product with v), every one within the bound.
TEST(ExternalInline, CorrectBf16IsAlignedWithTheOpRecords) {
  TempDir tmp;
  const auto rep = compare_inline(tmp, "examples/external/inline-bf16.toml", 0);
  EXPECT_EQ(rep["verdict"], "pass");
  const auto& probe = rep["alignment"]["probe"];
  ASSERT_TRUE(probe.contains("steps")) << rep["alignment"].dump();
  EXPECT_TRUE(probe["passed"].get<bool>()) << probe["at_tensor"] << " " << probe["ratio_max"];
  EXPECT_LT(probe["ratio_max"].get<double>(), probe["factor"].get<double>());
  const auto& t = probe["tensors"];
  for (const char* name : {"blocks.0.attn.matmul", "blocks.0.attn.softmax", "blocks.0.attn.matmul1",
                           "blocks.2.attn.softmax"})
    EXPECT_NE(std::find(t.begin(), t.end(), name), t.end()) << name << " not in " << t.dump();
  // Modules and ops in forward order: v's projection, the three ops, the output projection.
  const auto v = std::find(t.begin(), t.end(), "blocks.0.attn.v");
  ASSERT_NE(v, t.end());
  EXPECT_EQ(nlohmann::json(std::vector<nlohmann::json>(v, v + 5)),
            nlohmann::json({"blocks.0.attn.v", "blocks.0.attn.matmul", "blocks.0.attn.softmax",
                            "blocks.0.attn.matmul1", "blocks.0.attn.o.in"}));
}

// ---- two optimizations only PyTorch 2.x has (issue 51), on the wheel build's own torch ----------

// torch.compile (Inductor's C++ on the CPU) and F.scaled_dot_product_attention in the example
// trainer, each gated end to end against the eager fp32 baseline with the whole gate: approximate
// (declared by the variant), the noise envelope and the function probe (whose forwards run the
// compiled model, or the fused attention), timing pairs that take turns. Values only: the timing
// checks run under values_only_policy.toml; the speed is measured in bench/RESULTS.md.
class ExternalTorch2 : public ::testing::TestWithParam<const char*> {};

TEST_P(ExternalTorch2, VariantIsApproximatelyTheSameMath) {
  TempDir tmp;
  const auto rep =
      compare_passes_whole_gate(tmp, std::string("examples/external/") + GetParam() + ".toml");
  const fs::path arms = tmp.path() / "c" / "arms";
  const auto b = losses(arms / "baseline" / "metrics.jsonl"),
             v = losses(arms / "variant" / "metrics.jsonl");
  ASSERT_EQ(v.size(), 30u);
  EXPECT_LT(std::fabs(b.back() - v.back()), 0.01) << b.back() << " vs " << v.back();
  EXPECT_LT(v.back(), v.front() - 0.5);  // the variant learns
  EXPECT_TRUE(rep["determinism"]["variant_ok"].get<bool>()) << rep["determinism"].dump();
  EXPECT_EQ(rep["variant"]["tokens_per_sec_repeats"].size(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExternalTorch2, ::testing::Values("compile", "sdpa"));

// On torch 1.13 the trainer refuses both in one line naming what it needs (exit 2 from the run:
// a trainer that exits non-zero before its first step).
TEST(ExternalTorch2Refused, OnTorch1TheTrainerSaysWhatItNeeds) {
  TempDir tmp;
  auto r = run_lockstep({"run", "examples/external/compile.toml", "--steps", "10", "--out",
                         tmp / "a", "--quiet", "--no-history"},
                        tmp.path());
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--compile and --attention sdpa need PyTorch 2.x"), std::string::npos)
      << r.output;
}
