// Kernel conformance end to end (issue 35): the real binary checks real kernels (the built-ins,
// the fused_cpu and buggy_attention examples, tests/plugins/conformance_bugs.cpp) against their
// slots' exact math; each planted bug is rejected naming the case that exposes it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "cli_util.h"

using lockstep::testing::read_json;
using lockstep::testing::run_lockstep;
using lockstep::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// kernel -> the cases it failed (any direction), from `--json`.
std::map<std::string, std::set<std::string>> failed_cases(const nlohmann::json& j) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& r : j["rows"])
    if (!r["passed"].get<bool>()) out[r["kernel"].get<std::string>()].insert(r["case"].get<std::string>());
  return out;
}

}  // namespace

TEST(Conformance, EveryBuiltInPasses) {
  TempDir tmp;
  for (const char* cfg : {"configs/baseline.toml", "configs/variants/bf16.toml"}) {
    auto r = run_lockstep({"conformance", cfg, "--all", "--json", tmp / "c.json"}, tmp.path(), 300);
    const auto j = read_json(tmp.path() / "c.json");
#if LOCKSTEP_TEST_TORCH_MAJOR >= 2
    // LibTorch 2.x on the CPU: attention "fused" is PyTorch's flash kernel, whose backward
    // recomputes softmax from the stored logsumexp: at logits of ~440 (one_huge_logit) and ~30
    // (peaked_softmax) its grad v in fp32 is off by |logit| x fp32's ulp summed over the rows, 60x
    // and 1.5x the bound (bench/RESULTS.md "The wheel build"). Those two rows, and only those, fail;
    // in bf16 the built-in math rounds as much and it passes.
    if (std::string(cfg) == "configs/baseline.toml") {
      EXPECT_EQ(r.exit_code, 1) << cfg << "\n" << r.output;
      std::set<std::string> rows;
      for (const auto& row : j["rows"])
        if (!row["passed"].get<bool>())
          rows.insert(row["kernel"].get<std::string>() + " " + row["case"].get<std::string>() + " " +
                      row["direction"].get<std::string>() + " " + row["dtype"].get<std::string>());
      EXPECT_EQ(rows, (std::set<std::string>{"fused one_huge_logit grad v fp32",
                                             "fused peaked_softmax grad v fp32"}));
      continue;
    }
#endif
    EXPECT_EQ(r.exit_code, 0) << cfg << "\n" << r.output;
    EXPECT_TRUE(j["passed"].get<bool>()) << cfg;
    EXPECT_GE(j["kernels"].size(), 5u) << j["kernels"].dump();  // one per slot at least
    EXPECT_GT(j["rows"].size(), 50u);
  }
}

TEST(Conformance, TheFusedCpuExamplePasses) {
  TempDir tmp;
  // This build's own copy of the plugin (the config names the Debian build's, built against
  // another LibTorch than the wheel build's).
  auto r = run_lockstep({"conformance", "configs/variants/fused_cpu.toml", "--set",
                         std::string("plugins.load=[\"") + FUSED_CPU_SO + "\"]", "--json", tmp / "c.json"},
                        tmp.path(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto j = read_json(tmp.path() / "c.json");
  EXPECT_GE(j["kernels"].size(), 2u) << j["kernels"].dump();
}

TEST(Conformance, EachPlantedBugIsRejectedNamingItsCase) {
  TempDir tmp;
  auto r = run_lockstep({"conformance", "configs/variants/bf16.toml", "--plugin", CONFORMANCE_BUGS_SO,
                         "--json", tmp / "c.json"},
                        tmp.path(), 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto failed = failed_cases(read_json(tmp.path() / "c.json"));
  for (const char* k : {"scale_2pct", "bf16_accumulate", "no_max_subtraction", "gelu_tanh", "adamw_no_mask"})
    EXPECT_TRUE(failed.count(k)) << k << " passed\n" << r.output;
  EXPECT_TRUE(failed.count("no_max_subtraction") && failed.at("no_max_subtraction").count("one_huge_logit"))
      << r.output;
  EXPECT_TRUE(failed.count("bf16_accumulate") && failed.at("bf16_accumulate").count("long_rows"))
      << r.output;
  // The verdict line names slot, kernel, case, shape, dtype, direction and both errors.
  EXPECT_NE(r.output.find("attention \"scale_2pct\": case "), std::string::npos) << r.output;
}

TEST(Conformance, TheBuggyAttentionExampleIsRejected) {
  TempDir tmp;
  auto r = run_lockstep({"conformance", "configs/baseline.toml", "--plugin", BUGGY_SO, "--json",
                         tmp / "c.json"},
                        tmp.path(), 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(failed_cases(read_json(tmp.path() / "c.json")).count("sees_next_token")) << r.output;
}

// compare runs the check first: a variant bringing a kernel that fails it is rejected before any
// run starts, and report.json says which case.
TEST(Conformance, ACompareWithABuggyKernelIsRejectedBeforeAnyRun) {
  TempDir tmp;
  const fs::path variant = tmp.path() / "scale.toml";
  std::ofstream(variant) << "extends = \"" << LOCKSTEP_SOURCE_DIR << "/configs/variants/bf16.toml\"\n"
                         << "[plugins]\nload = [\"" << CONFORMANCE_BUGS_SO << "\"]\n"
                         << "[attention]\nimpl = \"scale_2pct\"\n";
  auto r = run_lockstep({"compare", "configs/variants/bf16.toml", variant.string(), "--out", tmp / "c",
                         "--no-history"},
                        tmp.path(), 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto rep = read_json(tmp.path() / "c" / "report.json");
  ASSERT_EQ(rep["checks"].size(), 1u) << rep["checks"].dump();
  EXPECT_EQ(rep["checks"][0]["name"], "kernel conformance");
  EXPECT_EQ(rep["checks"][0]["verdict"], "fail");
  EXPECT_FALSE(rep["conformance"]["passed"].get<bool>());
  EXPECT_NE(rep["checks"][0]["detail"].get<std::string>().find("attention \"scale_2pct\": case "),
            std::string::npos)
      << rep["checks"][0]["detail"];
  EXPECT_FALSE(fs::exists(tmp.path() / "c" / "arms" / "baseline"));  // nothing ran
}
