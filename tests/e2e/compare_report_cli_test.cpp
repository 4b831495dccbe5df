// End-to-end tests of what a comparison's reports claim, with the real binary (issue 14 §3): an
// --out folder holding an earlier comparison is refused unless --force; golden mode says what it
// cannot know (no changed keys, no second arm, nothing timed) and takes the knob class from the
// variant's own knobs; a workload change is timed and has no alignment verdict. Few steps on the
// tiny preset; no timing is asserted.
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli_util.h"
#include "tests/fixtures/read_file.h"

using namespace lockstep::testing;

namespace {

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

const nlohmann::json* check(const nlohmann::json& rep, const std::string& name) {
  for (const auto& c : rep["checks"])
    if (c["name"] == name) return &c;
  return nullptr;
}

}  // namespace

// A golden file from a 20-step run; bf16 against it (approximate: the seed band comes from the
// variant's own seeds), then fused attention into the same folder: refused, then --force.
TEST(CompareOut, AFolderHoldingAComparisonIsRefusedUnlessForceAndGoldenModeSaysWhatItCannotKnow) {
  TempDir tmp;
  ASSERT_EQ(run_lockstep({"run", "configs/baseline.toml", "--steps", "20", "--out", tmp / "r",
                          "--quiet", "--no-history", "--export-losses", tmp / "g.loss"},
                         tmp.path())
                .exit_code,
            0);
  // An existing empty folder needs no --force.
  fs::create_directories(tmp.path() / "c");
  auto bf16 = run_lockstep({"compare", "--golden", tmp / "g.loss", "configs/variants/bf16.toml",
                            "--steps", "20", "--out", tmp / "c", "--no-history"},
                           tmp.path());
  ASSERT_TRUE(bf16.exit_code == 0 || bf16.exit_code == 1) << bf16.output;
  auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["mode"], "golden");
  EXPECT_EQ(rep["alignment"]["class"], "approximate");  // bf16, not judged as an exact knob
  EXPECT_EQ(rep["changed_knobs"], nlohmann::json::array({"precision.compute"}));
  EXPECT_EQ(rep["class_source"],
            "the knob class (approximate) comes from the variant's own "
            "knobs against the defaults (precision.compute)")
      << rep["class_source"];
  ASSERT_TRUE(rep["alignment"]["seed_band"].is_object()) << bf16.output;
  EXPECT_EQ(rep["alignment"]["seed_band"]["seeds"], nlohmann::json::array({1234, 1235, 1236}));
  EXPECT_TRUE(has(rep["alignment"]["explanation"], "the variant's own seed-to-seed spread"))
      << rep["alignment"]["explanation"];
  // The band is centred on the golden loss (the reference), not on the variant's.
  EXPECT_DOUBLE_EQ(rep["alignment"]["seed_band"]["lo"].get<double>() +
                       rep["alignment"]["seed_band"]["half_width"].get<double>(),
                   rep["alignment"]["baseline_loss"].get<double>());
  EXPECT_TRUE(fs::exists(tmp.path() / "c" / "arms" / "variant-seed1235"));
  EXPECT_EQ(rep["timed"], false);
  ASSERT_NE(check(rep, "runs completed"), nullptr);
  EXPECT_EQ((*check(rep, "runs completed"))["detail"],
            "the variant ran to the end (golden mode: the other side is the golden file's curve)");
  // What golden mode cannot know is said, not made up: no changed keys of identical configs, no
  // second arm's 0 B of memory, no table of n/a timings.
  for (const std::string& text : {bf16.output, read_text(tmp.path() / "c" / "report.md"),
                                  read_text(tmp.path() / "c" / "report.html")}) {
    EXPECT_FALSE(has(text, "the configs are identical")) << text;
    EXPECT_FALSE(has(text, "both arms ran to the end")) << text;
    EXPECT_FALSE(has(text, " 0 B")) << text;
    EXPECT_FALSE(has(text, "step P50 ms")) << text;  // no timing table (the policy still shows)
    EXPECT_FALSE(has(text, "n/a")) << text;
    EXPECT_TRUE(has(text, "not timed (golden mode: no second arm to time against)")) << text;
    EXPECT_TRUE(has(text, "no baseline config, so no changed keys")) << text;
    EXPECT_TRUE(has(text, "the knob class (approximate) comes from the variant")) << text;
    EXPECT_TRUE(has(text, "own knobs against the defaults (precision.compute)")) << text;
  }
  EXPECT_TRUE(has(bf16.output, "Knobs (golden mode: no baseline config, so no changed keys)"));

  // The same folder again: refused in one line, exit 2, the first comparison untouched.
  const std::string report = read_text(tmp.path() / "c" / "report.json");
  std::ofstream(tmp.path() / "c" / "notes.txt") << "mine\n";
  auto again = run_lockstep({"compare", "--golden", tmp / "g.loss",
                             "configs/variants/fused_attention.toml", "--steps", "20", "--out",
                             tmp / "c", "--no-history"},
                            tmp.path());
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_EQ(again.output, "lockstep: --out " + (tmp / "c") +
                              " already holds a comparison (report.json, report.md, report.html, "
                              "junit.xml, arms/); choose another --out, remove it, or give --force "
                              "to replace it\n");
  EXPECT_EQ(read_text(tmp.path() / "c" / "report.json"), report);
  EXPECT_TRUE(fs::exists(tmp.path() / "c" / "arms" / "variant-seed1235"));

  // --force replaces it: the old seed-band folders are gone, other files stay.
  auto forced = run_lockstep({"compare", "--golden", tmp / "g.loss",
                              "configs/variants/fused_attention.toml", "--steps", "20", "--out",
                              tmp / "c", "--no-history", "--force"},
                             tmp.path());
  EXPECT_EQ(forced.exit_code, 0) << forced.output;
  auto rep2 = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep2["alignment"]["class"], "exact");
  EXPECT_EQ(rep2["changed_knobs"], nlohmann::json::array({"attention.impl"}));
  EXPECT_TRUE(rep2["alignment"]["aligned"].get<bool>());
  EXPECT_FALSE(fs::exists(tmp.path() / "c" / "arms" / "variant-seed1235"));
  EXPECT_TRUE(fs::exists(tmp.path() / "c" / "arms" / "variant" / "summary.json"));
  EXPECT_EQ(read_text(tmp.path() / "c" / "notes.txt"), "mine\n");
}

// Half the batch: another computation. No alignment verdict; both arms timed; the verdict rests on
// the timing checks (bounds only a gross fault crosses: tests never gate on timing).
TEST(CompareWorkload, ABatchSizeChangeIsTimedWithNoAlignmentVerdict) {
  TempDir tmp;
  auto r = run_lockstep({"compare", "configs/baseline.toml", "tests/configs/batch4.toml", "--steps",
                         "20", "--repeats", "2", "--policy",
                         "tests/configs/timing_lenient_policy.toml", "--out", tmp / "c",
                         "--no-history"},
                        tmp.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto rep = read_json(tmp.path() / "c" / "report.json");
  EXPECT_EQ(rep["alignment"]["class"], "workload");
  EXPECT_TRUE(rep["alignment"]["aligned"].is_null());
  EXPECT_EQ(rep["alignment"]["applicable"], false);
  EXPECT_EQ(rep["alignment"]["explanation"],
            "the workload changed (data.batch_size): the two curves are different computations, so "
            "their losses are shown, not judged; the verdict rests on the timing checks");
  EXPECT_EQ(check(rep, "loss alignment"), nullptr);
  EXPECT_NE(check(rep, "throughput"), nullptr);
  EXPECT_NE(check(rep, "p99 latency"), nullptr);
  ASSERT_NE(check(rep, "baseline deterministic"), nullptr);
  EXPECT_TRUE((*check(rep, "baseline deterministic"))["passed"].get<bool>());
  EXPECT_EQ(rep["timed"], true);
  EXPECT_EQ(rep["repeats"], 2);
  EXPECT_GT(rep["baseline"]["tokens_per_sec"].get<double>(), 0);
  EXPECT_GT(rep["variant"]["tokens_per_sec"].get<double>(), 0);
  EXPECT_TRUE(rep["delta"]["tokens_per_sec_pct"]["value"].is_number());
  bool said = false;
  for (const auto& w : rep["warnings"])
    said = said || (has(w, "workload change: the variant changes the workload itself "
                           "(data.batch_size)") &&
                    has(w, "the verdict rests on the timing checks only"));
  EXPECT_TRUE(said) << rep["warnings"].dump();
  EXPECT_TRUE(has(r.output, "Alignment (not applicable: the workload changed, loss at step 20, "
                            "not judged)"))
      << r.output;
  EXPECT_TRUE(has(r.output, "  not applicable: the workload changed (data.batch_size)"));
  const std::string md = read_text(tmp.path() / "c" / "report.md");
  for (const std::string& text : {r.output, md, read_text(tmp.path() / "c" / "report.html")}) {
    EXPECT_FALSE(has(text, "NOT aligned")) << text;
    EXPECT_FALSE(has(text, "not aligned")) << text;
    EXPECT_FALSE(has(text, "exact knob:")) << text;
  }
  EXPECT_TRUE(has(md, "| tokens/s |")) << md;
  EXPECT_FALSE(has(md, "Memory per rank")) << md;  // no arm is sharded
}

// ---- golden files that carry their envelope (issue 54, docs/golden.md) ------------------------

namespace {

// `from` with every loss x factor, the header and the envelope column kept: a planted drift.
void scale_losses(const fs::path& from, const fs::path& to, double factor) {
  std::ifstream in(from);
  std::ofstream out(to);
  out.precision(17);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind('#', 0) == 0) {
      out << line << "\n";
      continue;
    }
    std::istringstream ss(line);
    long long step = 0;
    double loss = 0;
    std::string rest;
    ss >> step >> loss;
    std::getline(ss, rest);
    out << step << " " << loss * factor << rest << "\n";
  }
}

CliResult export_bf16(const TempDir& tmp, const std::string& name, bool envelope) {
  std::vector<std::string> args{"run", "configs/variants/bf16.toml", "--steps", "30", "--set",
                                "run.threads=1", "--out", tmp / name, "--quiet", "--no-history",
                                "--export-losses", tmp / (name + ".loss")};
  if (!envelope) args.push_back("--no-envelope");
  return run_lockstep(args, tmp.path());
}

CliResult golden_compare(const TempDir& tmp, const std::string& golden, const std::string& out) {
  return run_lockstep({"compare", "--golden", tmp / golden, "configs/variants/bf16.toml",
                       "--steps", "30", "--set-variant", "run.threads=2", "--out", tmp / out,
                       "--no-history"},
                      tmp.path());
}

}  // namespace

// bf16 exported at one thread, judged at two (another reduction order: the low bits move, as a
// new base image's do): within c x the envelope measured at export; the same file with its losses
// x 1.02 is not. The report shows both environments.
TEST(GoldenEnvelope, RoundTripAcrossThreadCountsPassesAndAPlanted2PercentDriftFails) {
  TempDir tmp;
  auto exp = export_bf16(tmp, "g", true);
  ASSERT_EQ(exp.exit_code, 0) << exp.output;
  const std::string text = read_text(tmp.path() / "g.loss");
  EXPECT_EQ(text.rfind("# lockstep golden 2\n", 0), 0u) << text;
  EXPECT_TRUE(has(text, "\n# threads = 1\n")) << text;
  EXPECT_TRUE(has(text, "\n# envelope_runs = 3\n")) << text;
  EXPECT_TRUE(has(text, "\n# envelope_noise_source = unit roundoff of bf16 (2^-8)\n")) << text;
  EXPECT_TRUE(has(text, "\n# compiler = ")) << text;
  EXPECT_TRUE(fs::exists(tmp.path() / "g" / "envelope" / "noise3" / "metrics.jsonl"));

  auto ok = golden_compare(tmp, "g.loss", "ok");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  auto rep = read_json(tmp.path() / "ok" / "report.json");
  EXPECT_EQ(rep["alignment"]["rule"], "envelope") << rep["alignment"];
  EXPECT_TRUE(rep["alignment"]["aligned"].get<bool>()) << rep["alignment"]["explanation"];
  EXPECT_GT(rep["alignment"]["abs_diff"].get<double>(), 0.0);  // two environments, really
  EXPECT_EQ(rep["alignment"]["envelope"]["runs"], 3);
  EXPECT_TRUE(has(rep["alignment"]["explanation"], "by the golden file's noise envelope"))
      << rep["alignment"]["explanation"];
  EXPECT_EQ(rep["golden"]["format"], 2);
  EXPECT_TRUE(rep["golden"]["envelope"].get<bool>());
  EXPECT_EQ(rep["golden"]["environment"]["threads"], "1");
  EXPECT_EQ(rep["environment"]["threads"], "2");
  EXPECT_EQ(rep["golden"]["differing"], nlohmann::json::array({"threads"}));
  EXPECT_FALSE(fs::exists(tmp.path() / "ok" / "arms" / "variant-seed1235"));  // no band runs
  const std::string md = read_text(tmp.path() / "ok" / "report.md");
  EXPECT_TRUE(has(md, "| threads | `1` | `2` | differs |")) << md;
  EXPECT_TRUE(has(read_text(tmp.path() / "ok" / "report.html"), "Golden (export)"));

  scale_losses(tmp.path() / "g.loss", tmp.path() / "drift.loss", 1.02);
  auto bad = golden_compare(tmp, "drift.loss", "bad");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  auto brep = read_json(tmp.path() / "bad" / "report.json");
  EXPECT_EQ(brep["alignment"]["rule"], "envelope");
  EXPECT_FALSE(brep["alignment"]["aligned"].get<bool>());
}
