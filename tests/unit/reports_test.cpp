// Tests for the comparison reporters (reports/reporter.h): every format rendered from one
// synthetic CompareResult (tests/fixtures/compare_fixture.h), asserting on values, escaping,
// non-finite handling, the factory, atomic writes and the gnuplot fallback.
#include "reports/reporter.h"

#include <gtest/gtest.h>

#include "tests/fixtures/scoped_env.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "tests/fixtures/compare_fixture.h"
#include "harness/gate/gate.h"
#include "harness/util/files.h"
#include "reports/console_reporter.h"
#include "reports/gnuplot.h"
#include "reports/html_page.h"
#include "reports/html_reporter.h"
#include "reports/json_reporter.h"
#include "reports/junit_reporter.h"
#include "reports/markdown_reporter.h"

namespace lockstep::reports {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::set<std::string> keys(const json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size()))
    ++n;
  return n;
}

// Every value that follows one of the markers, up to the next quote or ')'.
std::vector<std::string> values_after(const std::string& text,
                                      const std::vector<std::string>& markers) {
  std::vector<std::string> out;
  for (const auto& m : markers)
    for (size_t at = text.find(m); at != std::string::npos; at = text.find(m, at + 1)) {
      size_t begin = at + m.size();
      out.push_back(text.substr(begin, text.find_first_of("'\")", begin) - begin));
    }
  return out;
}

json render_json(const compare::CompareResult& r) {
  return json::parse(JsonReporter().render(r));
}

using testing::ScopedEnv;

// A fresh empty folder under the system temp folder, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "reports_test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// --- report.json ---------------------------------------------------------------------------------

TEST(JsonReport, HasExactlyTheContractFields) {
  json j = render_json(testing::make_compare_result());
  EXPECT_EQ(keys(j),
            (std::set<std::string>{
                "verdict",      "exit_code",  "mode",      "alignment",     "loss_reference",
                "baseline",     "variant",    "delta",     "changed_knobs", "changes",
                "warnings",     "checks",     "breakdown", "policy",        "policy_source",
                "determinism",  "failed_arm", "failure",   "repeats",       "too_few_repeats",
                "timed",        "wall_seconds", "environment", "class_source", "tail_statistic",
                "power",        "common_peak", "sequential", "interleave", "interleave_note",
                "throughput_test", "trainer_protocol", "conformance", "git_refs", "golden"}));
  EXPECT_TRUE(j["conformance"].is_null());  // no kernel changed
  EXPECT_TRUE(j["golden"].is_null());       // an A/B comparison: no golden file (issue 54)
  EXPECT_TRUE(j["git_refs"].is_null());     // two configs, not two git commits (issue 55)
  // Lockstep's own trainer: protocol 2, everything (docs/protocol.md).
  EXPECT_EQ(j["trainer_protocol"]["baseline"],
            (json{{"external", false}, {"protocol", 2}, {"supports", {"turns", "noise", "probe"}},
                  {"lacks", json::array()}, {"compute", nullptr}, {"observed_compute", nullptr}}));
  EXPECT_EQ(keys(j["alignment"]),
            (std::set<std::string>{"class", "check_step", "baseline_loss", "variant_loss",
                                   "abs_diff", "tolerance", "aligned", "first_divergent_step",
                                   "max_abs_diff", "baseline_rounded", "variant_rounded",
                                   "equal_to_3dp", "seed_band", "explanation", "applicable",
                                   "rule", "envelope", "curve", "probe"}));
  EXPECT_EQ(keys(j["alignment"]["envelope"]),
            (std::set<std::string>{"runs", "noise_seeds", "factor", "noise", "noise_source",
                                   "noise_dtype", "noise_dtype_arm", "noise_dtype_from", "window",
                                   "values", "at_check", "bound_at_check", "inside"}));
  EXPECT_EQ(keys(j["alignment"]["curve"]),
            (std::set<std::string>{"statistic", "from_step", "to_step", "value", "bound",
                                   "bound_rule", "judged", "passed"}));
  for (const char* arm : {"baseline", "variant"}) {
    SCOPED_TRACE(arm);
    EXPECT_EQ(keys(j[arm]),
              (std::set<std::string>{"name", "config", "status", "failure", "tokens_per_sec",
                                     "tokens_per_sec_ci", "mfu", "mfu_common", "step_ms",
                                     "peak_memory_bytes",
                                     "phase_share", "phase_ms", "bound", "top_ops",
                                     "tokens_per_sec_repeats", "loss_curve", "alignment_run",
                                     "param_bytes_per_rank", "grad_bytes_per_rank",
                                     "optimizer_state_bytes_per_rank", "comm_bytes_per_step",
                                     "zero_stage", "world_size", "plugins"}));
    EXPECT_EQ(keys(j[arm]["step_ms"]),
              (std::set<std::string>{"p50", "p95", "p99", "mean", "n", "tail"}));
  }
  EXPECT_EQ(keys(j["delta"]),
            (std::set<std::string>{"tokens_per_sec_pct", "mfu_pts", "mfu_common_pts", "p50_ms_pct",
                                   "p99_ms_pct", "memory_pct", "param_bytes_per_rank_pct",
                                   "grad_bytes_per_rank_pct", "optimizer_state_bytes_per_rank_pct",
                                   "comm_bytes_per_step_pct"}));
  for (const char* d : {"tokens_per_sec_pct", "mfu_pts", "mfu_common_pts", "p50_ms_pct",
                        "p99_ms_pct"})
    EXPECT_EQ(keys(j["delta"][d]),
              (std::set<std::string>{"value", "ci", "p_value", "significant", "wording"}))
        << d;
  EXPECT_EQ(keys(j["changes"][0]), (std::set<std::string>{"key", "baseline", "variant"}));
  EXPECT_EQ(keys(j["checks"][0]),
            (std::set<std::string>{"name", "passed", "verdict", "detail", "p_value", "p_adjusted",
                                   "mde_pct"}));
  EXPECT_EQ(keys(j["policy"]), (std::set<std::string>{"tolerance", "check_step", "seeds",
                                                      "envelope_runs", "envelope_factor",
                                                      "envelope_noise", "probe_factor",
                                                      "curve_window_pct", "repeats",
                                                      "max_repeats", "max_minutes", "check_level",
                                                      "timing_steps", "alpha", "bootstrap",
                                                      "max_p99_regression_pct", "max_slowdown_pct",
                                                      "min_speedup_pct", "min_memory_saving_pct",
                                                      "p99_min_samples", "on_inconclusive",
                                                      "interleave"}));
  EXPECT_EQ(keys(j["power"]), (std::set<std::string>{"tokens_per_sec_mde_pct", "p99_mde_pct",
                                                     "p50_mde_pct", "power", "level"}));
  EXPECT_EQ(keys(j["common_peak"]), (std::set<std::string>{"flops", "arm", "source"}));
  EXPECT_EQ(keys(j["determinism"]),
            (std::set<std::string>{"checked", "baseline_ok", "variant_ok", "detail"}));
  EXPECT_EQ(keys(j["breakdown"]), (std::set<std::string>{"phases", "ops", "findings"}));
}

TEST(JsonReport, CarriesTheValues) {
  auto r = testing::make_compare_result();
  json j = render_json(r);
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["mode"], "ab");
  EXPECT_EQ(j["alignment"]["class"], "approximate");
  EXPECT_EQ(j["alignment"]["check_step"], 200);
  EXPECT_DOUBLE_EQ(j["alignment"]["abs_diff"].get<double>(), r.alignment.abs_diff);
  EXPECT_DOUBLE_EQ(j["alignment"]["baseline_loss"].get<double>(), r.baseline.loss_curve.back());
  EXPECT_EQ(j["alignment"]["baseline_rounded"], r.alignment.baseline_rounded);
  EXPECT_EQ(j["alignment"]["first_divergent_step"], r.alignment.first_divergent_step);
  EXPECT_GT(r.alignment.first_divergent_step, 0);
  EXPECT_EQ(j["alignment"]["rule"], "envelope");
  EXPECT_TRUE(j["alignment"]["seed_band"].is_null());
  EXPECT_EQ(j["alignment"]["envelope"]["runs"], 3);
  EXPECT_EQ(j["alignment"]["envelope"]["noise_seeds"], json({1, 2, 3}));
  EXPECT_EQ(j["alignment"]["envelope"]["noise"], 0.00390625);
  EXPECT_EQ(j["alignment"]["envelope"]["noise_source"], "unit roundoff of bf16 (2^-8)");
  EXPECT_EQ(j["alignment"]["envelope"]["noise_dtype"], "bf16");  // the variant's [precision]
  EXPECT_EQ(j["alignment"]["envelope"]["noise_dtype_arm"], "variant");
  EXPECT_EQ(j["alignment"]["envelope"]["noise_dtype_from"], "config");
  EXPECT_EQ(j["alignment"]["envelope"]["values"].size(), r.baseline.loss_curve.size());
  EXPECT_DOUBLE_EQ(j["alignment"]["envelope"]["bound_at_check"].get<double>(), 0.004);
  EXPECT_TRUE(j["alignment"]["envelope"]["inside"].get<bool>());
  EXPECT_EQ(j["alignment"]["curve"]["statistic"], "mean_abs_diff");
  EXPECT_EQ(j["alignment"]["curve"]["from_step"], 161);
  EXPECT_EQ(j["alignment"]["curve"]["bound"], 0.0036);
  EXPECT_EQ(j["alignment"]["curve"]["bound_rule"], "factor x mean envelope");
  EXPECT_EQ(j["alignment"]["curve"]["passed"], true);
  EXPECT_EQ(j["delta"]["tokens_per_sec_pct"]["value"], 9.23);
  EXPECT_EQ(j["delta"]["tokens_per_sec_pct"]["ci"], json({7.1, 11.0}));
  EXPECT_EQ(j["delta"]["tokens_per_sec_pct"]["p_value"], 0.0079);
  EXPECT_EQ(j["delta"]["tokens_per_sec_pct"]["significant"], true);
  EXPECT_EQ(j["delta"]["tokens_per_sec_pct"]["wording"], "faster");
  EXPECT_EQ(j["delta"]["p99_ms_pct"]["ci"], json({2.1, 14.0}));
  EXPECT_EQ(j["delta"]["memory_pct"], -12.5);
  EXPECT_EQ(j["baseline"]["tokens_per_sec"], 10180);
  EXPECT_EQ(j["variant"]["tokens_per_sec"], 11120);
  EXPECT_EQ(j["variant"]["name"], "bf16");
  EXPECT_EQ(j["variant"]["config"], "configs/variants/bf16.toml");
  EXPECT_EQ(j["variant"]["tokens_per_sec_ci"],
            json({r.variant.tokens_per_sec_ci_lo, r.variant.tokens_per_sec_ci_hi}));
  EXPECT_EQ(j["variant"]["tokens_per_sec_repeats"].size(), 5u);
  EXPECT_EQ(j["variant"]["loss_curve"].size(), 200u);
  EXPECT_DOUBLE_EQ(j["variant"]["mfu"].get<double>(), *r.variant.mfu);
  EXPECT_DOUBLE_EQ(j["baseline"]["step_ms"]["p99"].get<double>(), r.baseline.step_ms.p99);
  EXPECT_EQ(j["baseline"]["peak_memory_bytes"], 512ll << 20);
  EXPECT_EQ(j["baseline"]["status"], "ok");
  EXPECT_TRUE(j["baseline"]["failure"].is_null());
  EXPECT_EQ(j["baseline"]["alignment_run"]["config_hash"], "3f9a1c07d2e4b618");
  EXPECT_EQ(j["baseline"]["alignment_run"]["steps"], 200);
  EXPECT_EQ(j["changed_knobs"], json({"precision.compute"}));
  EXPECT_EQ(j["changes"][0]["key"], "precision.compute");
  EXPECT_EQ(j["changes"][0]["baseline"], "\"fp32\"");
  EXPECT_EQ(j["changes"][0]["variant"], "\"bf16\"");
  EXPECT_EQ(j["warnings"].size(), 1u);
  ASSERT_EQ(j["checks"].size(), 5u);
  EXPECT_EQ(j["checks"][1]["name"], "P99 step latency");
  EXPECT_EQ(j["checks"][1]["passed"], false);
  EXPECT_EQ(j["checks"][1]["detail"], r.checks[1].detail);
  EXPECT_EQ(j["checks"][0]["passed"], true);
  EXPECT_EQ(j["policy"]["max_p99_regression_pct"], 5);
  EXPECT_EQ(j["policy"]["min_speedup_pct"], 3);
  EXPECT_TRUE(j["policy"]["min_memory_saving_pct"].is_null());
  EXPECT_EQ(j["policy"]["repeats"], 5);
  EXPECT_EQ(j["policy_source"], "configs/variants/bf16.toml [gate]");
  EXPECT_EQ(j["determinism"]["checked"], true);
  EXPECT_TRUE(j["failed_arm"].is_null());
  EXPECT_TRUE(j["failure"].is_null());
  EXPECT_EQ(j["repeats"], 5);
  EXPECT_TRUE(j["sequential"].is_null());  // fixed repeats
  EXPECT_EQ(j["policy"]["check_level"], 0.05);
  EXPECT_EQ(j["timed"], true);
  EXPECT_EQ(j["too_few_repeats"], false);
  EXPECT_EQ(j["wall_seconds"], 84.2);
  EXPECT_EQ(j["environment"]["host"], "ci-runner-3");
}

// What the comparison could see: the MDEs, each check's verdict word, the tail statistic by name
// with its n, MFU against one common peak, and the on_inconclusive rule that decided the exit.
TEST(JsonReport, CarriesPowerVerdictsTailAndCommonPeak) {
  auto r = testing::make_compare_result();
  r.checks.push_back(compare::Check{compare::CheckKind::Throughput, true, "tokens/s ...",
                                    compare::Verdict::Inconclusive});
  r.checks.back().p_value = 0.03;
  r.checks.back().p_adjusted = 0.06;
  r.checks.back().mde_pct = 2.31;
  json j = render_json(r);
  EXPECT_EQ(j["power"]["tokens_per_sec_mde_pct"], 2.31);
  EXPECT_EQ(j["power"]["p99_mde_pct"], 27.5);
  EXPECT_EQ(j["power"]["p50_mde_pct"], 1.84);
  EXPECT_EQ(j["policy"]["on_inconclusive"], "pass");
  EXPECT_EQ(j["policy"]["p99_min_samples"], 900);
  EXPECT_EQ(j["policy"]["timing_steps"], 200);
  EXPECT_EQ(j["checks"][0]["verdict"], "pass");  // from `passed` (loss alignment)
  EXPECT_EQ(j["checks"][1]["verdict"], "fail");  // from `passed` (the fixture's failed P99)
  EXPECT_TRUE(j["checks"][0]["p_adjusted"].is_null());
  const auto& t = j["checks"].back();
  EXPECT_EQ(t["verdict"], "inconclusive");
  EXPECT_EQ(t["passed"], true);
  EXPECT_EQ(t["p_value"], 0.03);
  EXPECT_EQ(t["p_adjusted"], 0.06);
  EXPECT_EQ(t["mde_pct"], 2.31);
  EXPECT_EQ(j["tail_statistic"], "max of 150 steps");
  EXPECT_EQ(j["baseline"]["step_ms"]["n"], 150);
  EXPECT_DOUBLE_EQ(j["baseline"]["step_ms"]["tail"].get<double>(), r.baseline.step_ms_tail);
  EXPECT_GE(j["baseline"]["step_ms"]["tail"].get<double>(),
            j["baseline"]["step_ms"]["p99"].get<double>());  // a maximum: at least the P99
  EXPECT_EQ(j["common_peak"]["arm"], "variant");
  EXPECT_EQ(j["common_peak"]["flops"], 2.1e11);
  EXPECT_EQ(j["delta"]["mfu_common_pts"]["value"], 19.2);
  EXPECT_DOUBLE_EQ(j["baseline"]["mfu_common"].get<double>(), *r.baseline.mfu_common);
  r.policy.on_inconclusive = gate::OnInconclusive::Fail;
  EXPECT_EQ(render_json(r)["policy"]["on_inconclusive"], "fail");
  // Not timed: no power, no tail statistic.
  r.timed = false;
  r.power = compare::Power{};
  json u = render_json(r);
  EXPECT_TRUE(u["power"].is_null());
  EXPECT_TRUE(u["tail_statistic"].is_null());
}

// repeats = "auto": the policy says "auto", the sequence's looks and why it stopped are in the
// JSON, and every format says where it stopped and at what level, and labels the CIs' level.
TEST(JsonReport, AutoRepeatsRecordTheLooksAndTheirLevel) {
  auto r = testing::make_compare_result();
  r.policy.auto_repeats = true;
  r.policy.repeats = 6;
  r.policy.max_repeats = 24;
  r.repeats = 12;
  r.sequential.enabled = true;
  using compare::CheckKind;
  using compare::Verdict;
  r.sequential.looks = {
      {6,
       1.5,
       {{CheckKind::Throughput, Verdict::Inconclusive}, {CheckKind::P99Latency, Verdict::Pass}}},
      {12, 2.75, {{CheckKind::Throughput, Verdict::Pass}, {CheckKind::P99Latency, Verdict::Pass}}}};
  r.sequential.stopped = "decisive";
  json j = render_json(r);
  EXPECT_EQ(j["policy"]["repeats"], "auto");
  EXPECT_EQ(j["policy"]["max_repeats"], 24);
  EXPECT_DOUBLE_EQ(j["policy"]["check_level"].get<double>(), 0.0125);
  const json& s = j["sequential"];
  EXPECT_EQ(keys(s), (std::set<std::string>{"method", "planned_looks", "level_per_look", "looks",
                                            "stopped"}));
  EXPECT_EQ(s["planned_looks"], json({6, 12, 18, 24}));
  EXPECT_DOUBLE_EQ(s["level_per_look"].get<double>(), 0.0125);
  ASSERT_EQ(s["looks"].size(), 2u);
  EXPECT_EQ(s["looks"][0]["repeats"], 6);
  EXPECT_EQ(s["looks"][0]["verdicts"]["throughput"], "inconclusive");
  EXPECT_EQ(s["looks"][1]["verdicts"]["p99 latency"], "pass");
  EXPECT_EQ(s["stopped"], "decisive");
  EXPECT_EQ(j["repeats"], 12);
  const std::string said = "stopped at look 2 of 4 (12 repeats per arm, 2.8 min) because every "
                           "timing check is decisive; each look tests at alpha/4 = 0.0125";
  const std::string console = ConsoleReporter().render(r);
  const std::string md = MarkdownReporter().render(r);
  const std::string html = HtmlReporter().render(r);
  for (const std::string* out : {&console, &md, &html}) {
    EXPECT_NE(out->find(said), std::string::npos) << *out;
    EXPECT_NE(out->find("98.75% CI"), std::string::npos) << *out;
    EXPECT_EQ(out->find("95% CI"), std::string::npos) << *out;
  }
}

// Every human-readable format names the tail statistic with its n, shows both MFUs and the MDEs.
TEST(Reports, NameTheTailStatisticShowBothMfusAndThePower) {
  auto r = testing::make_compare_result();
  const std::string console = ConsoleReporter().render(r);
  const std::string md = MarkdownReporter().render(r);
  const std::string html = HtmlReporter().render(r);
  const auto same = [](const std::string& s) { return s; };
  const std::vector<std::pair<const std::string*, std::function<std::string(const std::string&)>>>
      formats{{&console, same}, {&md, same}, {&html, html_escape}};
  for (const auto& [out, esc] : formats) {
    EXPECT_NE(out->find("step ms, max of 150 steps"), std::string::npos) << *out;
    EXPECT_NE(out->find("step ms, P50 (n=150)"), std::string::npos);
    EXPECT_EQ(out->find("step P99"), std::string::npos);  // no P99 of 150 steps
    EXPECT_NE(out->find("MFU (own peak)"), std::string::npos);
    EXPECT_NE(out->find("MFU (common peak)"), std::string::npos);
    EXPECT_NE(out->find("+19.2 pts"), std::string::npos);  // the common-peak delta
    EXPECT_NE(
        out->find(esc("the variant's peak, 2.1e+11 FLOP/s (calibrated bf16 GEMM, 1 thread)")),
        std::string::npos)
        << *out;
    EXPECT_NE(out->find("minimum detectable effect (power 0.8, level 0.0167): tokens/s 2.3%, "
                        "P50 1.8%, max of 150 steps 27.5%"),
              std::string::npos)
        << *out;
  }
  r.checks.push_back(compare::Check{compare::CheckKind::Throughput, true, "straddles",
                                    compare::Verdict::Inconclusive});
  const std::string c2 = ConsoleReporter().render(r);
  EXPECT_NE(c2.find("? throughput"), std::string::npos);
  EXPECT_NE(c2.find("1 timing check inconclusive (could not tell; on_inconclusive = pass: passes)"),
            std::string::npos);
  EXPECT_NE(ConsoleReporter(false).render(r).find("[ ?? ] throughput"), std::string::npos);
  EXPECT_NE(MarkdownReporter().render(r).find("| ❔ | throughput | straddles |"), std::string::npos);
  EXPECT_NE(JunitReporter().render(r).find("<system-out>inconclusive: straddles</system-out>"),
            std::string::npos);
}

// Every human format names the test behind the tokens/s row: a paired t when the arms took turns
// step by step, the bootstrap and Mann-Whitney otherwise.
TEST(Reports, NameTheTestOfTheTokensRow) {
  auto r = testing::make_compare_result();
  for (const std::string mode : {"step", "repeat"}) {
    r.interleave = mode == "step" ? compare::Interleave::Step : compare::Interleave::Repeat;
    const bool paired = mode == "step";
    const std::string paired_t = "tokens/s: paired t over the pairs' log ratios, 95% CI";
    for (const auto& [out, named] :
         {std::pair{ConsoleReporter().render(r), paired_t},
          std::pair{MarkdownReporter().render(r), paired_t},
          std::pair{HtmlReporter().render(r), html_escape(paired_t)}}) {
      EXPECT_EQ(out.find(named) != std::string::npos, paired)
          << mode << "\n" << out;
      EXPECT_NE(out.find(paired ? "the rest: 95% bootstrap CI, Mann-Whitney p"
                                : "medians, 95% bootstrap CI, Mann-Whitney p"),
                std::string::npos)
          << mode << "\n" << out;
    }
  }
}

// A comparison whose timing never ran (the loss did not align): no made-up zeros anywhere.
TEST(JsonReport, AnUntimedComparisonHasNullSpeedAndNoTimingChecks) {
  compare::CompareResult r;
  r.mode = compare::Mode::AB;
  r.alignment.aligned = false;
  r.alignment.explanation = "exact knob: |delta| 1.2e-01 at step 8 exceeds the tolerance 5e-04";
  gate::apply(r);
  for (const auto& c : r.checks) {
    EXPECT_NE(c.name, "throughput");
    EXPECT_NE(c.name, "p99 latency");
  }
  EXPECT_EQ(r.exit_code, 1);
  json j = render_json(r);
  EXPECT_EQ(j["timed"], false);
  EXPECT_EQ(j["repeats"], 0);
  EXPECT_TRUE(j["baseline"]["tokens_per_sec"].is_null());
  EXPECT_TRUE(j["variant"]["step_ms"]["p99"].is_null());
  for (const char* d : {"tokens_per_sec_pct", "mfu_pts", "p50_ms_pct", "p99_ms_pct"}) {
    EXPECT_TRUE(j["delta"][d]["value"].is_null()) << d;
    EXPECT_TRUE(j["delta"][d]["p_value"].is_null()) << d;
    EXPECT_EQ(j["delta"][d]["wording"], "unknown") << d;
  }
  const std::string console = ConsoleReporter(false).render(r);
  EXPECT_NE(console.find("Performance (not timed (the loss does not align))"), std::string::npos)
      << console;
  EXPECT_NE(MarkdownReporter().render(r).find("not timed (the loss does not align)"),
            std::string::npos);
}

TEST(JsonReport, NonFiniteNumbersAreNull) {
  auto r = testing::make_compare_result();
  r.alignment.max_abs_diff = kNaN;
  r.alignment.variant_loss = kInf;
  r.alignment.envelope->values[1] = kNaN;
  r.variant.loss_curve[3] = kNaN;
  r.variant.tokens_per_sec_repeats[0] = -kInf;
  r.variant.step_ms.p99 = kNaN;
  r.variant.mfu = kNaN;
  r.delta.p99_ms_pct.point = kInf;
  r.delta.p99_ms_pct.ci_hi = kNaN;
  r.delta.memory_pct = kNaN;
  r.wall_seconds = kNaN;
  r.baseline.alignment_run.final_loss = kNaN;
  std::string text = JsonReporter().render(r);
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  EXPECT_EQ(text.find("nan"), std::string::npos);
  EXPECT_EQ(text.find("Infinity"), std::string::npos);
  json j = json::parse(text);
  EXPECT_TRUE(j["alignment"]["max_abs_diff"].is_null());
  EXPECT_TRUE(j["alignment"]["variant_loss"].is_null());
  EXPECT_TRUE(j["alignment"]["envelope"]["values"][1].is_null());
  EXPECT_TRUE(j["variant"]["loss_curve"][3].is_null());
  EXPECT_TRUE(j["variant"]["loss_curve"][4].is_number());
  EXPECT_TRUE(j["variant"]["tokens_per_sec_repeats"][0].is_null());
  EXPECT_TRUE(j["variant"]["step_ms"]["p99"].is_null());
  EXPECT_TRUE(j["variant"]["mfu"].is_null());
  EXPECT_TRUE(j["delta"]["p99_ms_pct"]["value"].is_null());
  EXPECT_TRUE(j["delta"]["p99_ms_pct"]["ci"][0].is_number());
  EXPECT_TRUE(j["delta"]["p99_ms_pct"]["ci"][1].is_null());
  EXPECT_TRUE(j["delta"]["memory_pct"].is_null());
  EXPECT_TRUE(j["wall_seconds"].is_null());
  EXPECT_TRUE(j["baseline"]["alignment_run"]["final_loss"].is_null());
}

TEST(JsonReport, UnknownAndAbsentValues) {
  auto r = testing::make_compare_result();
  r.delta.mfu_pts = compare::Delta{};
  r.delta.mfu_pts.known = false;
  r.delta.memory_pct.reset();
  r.baseline.mfu.reset();
  r.alignment.first_divergent_step = 0;
  r.alignment.envelope.reset();
  r.alignment.curve.judged = false;
  r.verdict = compare::Verdict::Pass;
  r.exit_code = 0;
  r.failed_arm = compare::Arm::Variant;
  r.failure = "nonfinite: loss is NaN at step 37";
  r.variant.status = RunStatus::Nonfinite;
  r.variant.failure = "loss is NaN at step 37";
  json j = render_json(r);
  EXPECT_TRUE(j["delta"]["mfu_pts"]["value"].is_null());
  EXPECT_TRUE(j["delta"]["mfu_pts"]["ci"].is_null());
  EXPECT_TRUE(j["delta"]["mfu_pts"]["p_value"].is_null());
  EXPECT_EQ(j["delta"]["mfu_pts"]["significant"], false);
  EXPECT_EQ(j["delta"]["mfu_pts"]["wording"], "unknown");
  EXPECT_TRUE(j["delta"]["memory_pct"].is_null());
  EXPECT_EQ(j["baseline"]["mfu"], "unknown");
  EXPECT_TRUE(j["alignment"]["first_divergent_step"].is_null());
  EXPECT_TRUE(j["alignment"]["envelope"].is_null());
  EXPECT_TRUE(j["alignment"]["curve"]["bound"].is_null());  // not judged: reported only
  EXPECT_TRUE(j["alignment"]["curve"]["passed"].is_null());
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["failed_arm"], "variant");
  EXPECT_EQ(j["failure"], "nonfinite: loss is NaN at step 37");
  EXPECT_EQ(j["variant"]["status"], "nonfinite");
  EXPECT_EQ(j["variant"]["failure"], "loss is NaN at step 37");
}

// --- junit.xml -----------------------------------------------------------------------------------

TEST(JunitReport, OneTestcasePerCheckWithEscapedFailures) {
  auto r = testing::make_compare_result();
  r.checks.push_back(
      {compare::CheckKind::MemorySaving, false, "line one\nline two 'quoted' \x01 < 5%"});
  r.checks.back().name = "memory <saving> & \"quotes\"";
  std::string xml = JunitReporter().render(r);
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0), 0u);
  EXPECT_EQ(count(xml, "<testcase "), 6u);
  EXPECT_EQ(count(xml, "<failure "), 2u);
  EXPECT_EQ(count(xml, "classname=\"lockstep.gate\""), 6u);
  EXPECT_NE(xml.find("<testsuite name=\"lockstep.gate\" tests=\"6\" failures=\"2\" errors=\"0\" "
                     "skipped=\"0\" time=\"84.200\">"),
            std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"lockstep.gate\" name=\"P99 step latency\""),
            std::string::npos);
  EXPECT_NE(
      xml.find(
          "<failure message=\"P99 +7.9% [+2.1%, +14.0%] &gt; max 5% &amp; p=0.032 &lt; alpha 0.05 "
          "(&quot;significant&quot;)\" type=\"gate\">"),
      std::string::npos);
  EXPECT_NE(xml.find("name=\"memory &lt;saving&gt; &amp; &quot;quotes&quot;\""), std::string::npos);
  EXPECT_NE(xml.find("message=\"line one&#10;line two &apos;quoted&apos;  &lt; 5%\""),
            std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"verdict\" value=\"fail\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"change.precision.compute\" value=\"&quot;fp32&quot; -&gt; "
                     "&quot;bf16&quot;\"/>"),
            std::string::npos);
  // Every '<' left in the document opens markup, never text from a check.
  EXPECT_EQ(count(xml, "<"),
            count(xml, "<?xml") + count(xml, "<testsuite") + count(xml, "</testsuite") +
                count(xml, "<propert") + count(xml, "</properties") + count(xml, "<testcase") +
                count(xml, "</testcase") + count(xml, "<failure") + count(xml, "</failure") +
                count(xml, "<system-out") + count(xml, "</system-out"));
}

TEST(JunitReport, XmlEscape) {
  EXPECT_EQ(xml_escape("a<b>&\"c'\t\r\n\x1f\x7f"), "a&lt;b&gt;&amp;&quot;c&apos;&#9;&#13;&#10;");
  EXPECT_EQ(xml_escape("±✔ utf-8"), "±✔ utf-8");
}

// --- report.md -----------------------------------------------------------------------------------

TEST(MarkdownReport, VerdictChecksAndSections) {
  auto r = testing::make_compare_result();
  std::string md = MarkdownReporter().render(r);
  EXPECT_EQ(md.rfind("## ❌ Lockstep: FAIL — bf16 vs baseline\n", 0), 0u);
  for (const auto& c : r.checks)
    EXPECT_NE(md.find("| " + markdown_escape(c.name) + " |"), std::string::npos) << c.name;
  EXPECT_NE(md.find("| ❌ | P99 step latency | P99 +7.9% \\[+2.1%, +14.0%\\] &gt; max 5% &amp; "
                    "p=0.032 &lt; alpha 0.05"),
            std::string::npos);
  EXPECT_NE(md.find("| ✅ | loss alignment |"), std::string::npos);
  EXPECT_NE(md.find("> ⚠️ tokens/s varies by 4.1%"), std::string::npos);
  EXPECT_NE(md.find("| `precision.compute` | `\"fp32\"` | `\"bf16\"` | approximate |"),
            std::string::npos);
  EXPECT_NE(md.find("| tokens/s | 10180 | 11120 | **+9.2%** | [+7.1%, +11.0%] | 0.008 | faster |"),
            std::string::npos);
  EXPECT_NE(md.find("<details><summary>Policy (configs/variants/bf16.toml \\[gate\\])</summary>"),
            std::string::npos);
  EXPECT_NE(md.find("tokens/s: significant speed-up of at least 3%"), std::string::npos);
  r.verdict = compare::Verdict::Pass;
  EXPECT_EQ(MarkdownReporter().render(r).rfind("## ✅ Lockstep: PASS", 0), 0u);
}

TEST(MarkdownReport, EscapesTableCells) {
  EXPECT_EQ(markdown_escape("a|b *c* <d> _e_\nf"), "a\\|b \\*c\\* &lt;d&gt; \\_e\\_ f");
}

// --- console -------------------------------------------------------------------------------------

// Which u, from which dtype, from where; what the trainer was seen computing in is shown apart.
TEST(Report, TheEnvelopesDtypeIsExplained) {
  auto r = testing::make_compare_result();
  EXPECT_EQ(text::noise_dtype_origin(r), "bf16, the variant's [precision] compute");
  r.alignment.envelope->noise_dtype = {"fp32", compare::Arm::Variant, compare::DtypeFrom::Default};
  r.variant_trainer.observed_compute = "bf16";
  EXPECT_EQ(text::noise_dtype_origin(r),
            "fp32, the default (the variant declares no compute dtype in its hello or "
            "[precision]); the variant's trainer was seen computing in bf16 (observed, not "
            "declared)");
  r.alignment.envelope->noise_dtype = {"bf16", compare::Arm::Variant, compare::DtypeFrom::Hello};
  r.variant_trainer.compute = "bf16";
  EXPECT_EQ(text::noise_dtype_origin(r), "bf16, declared in the variant's hello");
  r.alignment.envelope->noise_dtype.from = compare::DtypeFrom::Gate;
  EXPECT_EQ(text::noise_dtype_origin(r), "");
  EXPECT_NE(MarkdownReporter().render(testing::make_compare_result())
                .find("unit roundoff of bf16 (2^-8): bf16, the variant's"),
            std::string::npos);
}

TEST(ConsoleReport, VerdictTable) {
  auto r = testing::make_compare_result();
  std::string out = ConsoleReporter().render(r);
  EXPECT_EQ(out.rfind("══ Lockstep compare: FAIL ══  (exit 1, mode ab, 84.2 s)\n", 0), 0u);
  EXPECT_NE(out.find("precision.compute: \"fp32\" -> \"bf16\"  (approximate)"), std::string::npos);
  EXPECT_NE(out.find("! tokens/s varies"), std::string::npos);
  EXPECT_NE(out.find("baseline " + r.alignment.baseline_rounded), std::string::npos);
  EXPECT_NE(out.find("variant " + r.alignment.variant_rounded), std::string::npos);
  EXPECT_NE(out.find("3 runs, noise unit roundoff of bf16 (2^-8): bf16, the variant's [precision] "
                     "compute"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("curve rule"), std::string::npos);
  EXPECT_NE(out.find("+9.2%"), std::string::npos);
  EXPECT_NE(out.find("[+7.1%, +11.0%]"), std::string::npos);
  EXPECT_NE(out.find("✘ P99 step latency"), std::string::npos);
  EXPECT_NE(out.find("✔ loss alignment"), std::string::npos);
  EXPECT_NE(out.find("512.0 MiB"), std::string::npos);
  EXPECT_NE(out.find("-12.5%"), std::string::npos);
  EXPECT_NE(out.find("Policy (configs/variants/bf16.toml [gate])"), std::string::npos);
  std::string ascii = ConsoleReporter(false).render(r);
  EXPECT_NE(ascii.find("[FAIL] P99 step latency"), std::string::npos);
  EXPECT_NE(ascii.find("[ ok ] loss alignment"), std::string::npos);
  for (char c : ascii)
    ASSERT_EQ(static_cast<unsigned char>(c) & 0x80, 0) << "non-ASCII output in ASCII mode";
}

// --- html ----------------------------------------------------------------------------------------

TEST(HtmlReport, SelfContainedWithPlots) {
  auto r = testing::make_compare_result();
  std::string html = HtmlReporter().render(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>\n", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_NE(html.find("✘ FAIL"), std::string::npos);
  for (const auto& c : r.checks)
    EXPECT_NE(html.find(html_escape(c.name)), std::string::npos) << c.name;
  EXPECT_NE(html.find("<code>precision.compute</code>"), std::string::npos);
  EXPECT_NE(html.find("<code>&quot;bf16&quot;</code>"), std::string::npos);
  EXPECT_NE(html.find("tokens/s: significant speed-up of at least 3%"), std::string::npos);
  // Offline: nothing to fetch, no script.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("stylesheet"), std::string::npos);
  EXPECT_EQ(count(html, "http"), count(html, "xmlns=\"http://www.w3.org/2000/svg\"") +
                                     count(html, "xmlns:xlink=\"http://www.w3.org/1999/xlink\""));
  // The four gnuplot plots, inlined without their XML prolog.
  EXPECT_EQ(count(html, "<svg role=\"img\" class=\"plot\""), 4u)
      << gnuplot_binary() << " did not draw every plot";
  EXPECT_EQ(count(html, "plot unavailable"), 0u);
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find("<!DOCTYPE svg"), std::string::npos);
  for (const char* title :
       {"<title>loss curves</title>", "<title>loss difference</title>",
        "<title>step latency distribution</title>", "<title>throughput per arm</title>"})
    EXPECT_NE(html.find(title), std::string::npos) << title;
  // Ids stay unique across the inlined SVGs, and every local reference resolves.
  std::set<std::string> ids;
  for (const auto& id : values_after(html, {" id='", " id=\""}))
    EXPECT_TRUE(ids.insert(id).second) << "duplicate id " << id;
  EXPECT_GT(ids.size(), 4u);
  for (const auto& ref : values_after(html, {"href='#", "href=\"#", "url(#"}))
    EXPECT_TRUE(ids.count(ref)) << "dangling reference #" << ref;
}

TEST(HtmlReport, EscapesUserText) {
  auto r = testing::make_compare_result();
  r.variant.name = "<script>alert('x')</script>";
  r.checks[0].detail = "a < b & \"c\"";
  std::string html = HtmlReporter().render(r);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &lt; b &amp; &quot;c&quot;"), std::string::npos);
}

TEST(HtmlReport, MissingGnuplotSaysPlotUnavailable) {
  ScopedEnv env("LOCKSTEP_GNUPLOT", "/nonexistent/gnuplot");
  std::string html = HtmlReporter().render(testing::make_compare_result());
  EXPECT_EQ(count(html,
                  "<p class=\"unavailable\">plot unavailable: /nonexistent/gnuplot: cannot run: No "
                  "such file or directory</p>"),
            4u);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(HtmlReport, FailingGnuplotSaysPlotUnavailable) {
  ScopedEnv env("LOCKSTEP_GNUPLOT", "false");
  std::string html = HtmlReporter().render(testing::make_compare_result());
  EXPECT_EQ(count(html, "plot unavailable: false failed (exit status 1)"), 4u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(HtmlReport, NoDataSaysPlotUnavailable) {
  auto r = testing::make_compare_result();
  r.baseline.loss_curve.assign(3, kNaN);
  r.variant.loss_curve.clear();
  r.baseline.step_ms_repeats.clear();
  r.variant.step_ms_repeats.clear();
  std::string html = HtmlReporter().render(r);
  EXPECT_NE(html.find("plot unavailable: no finite loss values recorded"), std::string::npos);
  EXPECT_NE(html.find("plot unavailable: no step with both losses finite"), std::string::npos);
  EXPECT_NE(html.find("plot unavailable: no timed steps recorded"), std::string::npos);
  EXPECT_EQ(count(html, "<svg role=\"img\" class=\"plot\""), 1u);  // throughput still has data
}

TEST(Plots, GnuplotErrorsAreReportedNotThrown) {
  Plot p = run_gnuplot("plot 'missing.dat' using 1:2", {}, "x", "t");
  EXPECT_FALSE(p.ok());
  EXPECT_NE(p.error.find("missing.dat"), std::string::npos) << p.error;
  EXPECT_EQ(gnuplot_quote("it's"), "'it''s'");
}

// --- factory and files ---------------------------------------------------------------------------

TEST(ReporterFactory, EveryFormatAndUnknown) {
  const std::vector<std::pair<std::string, std::string>> formats{{"console", ""},
                                                                 {"json", "report.json"},
                                                                 {"markdown", "report.md"},
                                                                 {"html", "report.html"},
                                                                 {"junit", "junit.xml"}};
  for (const auto& [format, file] : formats) {
    auto rep = make_reporter(format);
    ASSERT_NE(rep, nullptr);
    EXPECT_EQ(rep->format(), format);
    EXPECT_EQ(rep->filename(), file);
  }
  EXPECT_EQ(report_formats(), (std::vector<std::string>{"json", "markdown", "html", "junit"}));
  EXPECT_THROW(make_reporter("yaml"), std::invalid_argument);
  EXPECT_THROW(make_reporter(""), std::invalid_argument);
  try {
    make_reporter("pdf");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'pdf'"), std::string::npos);
  }
}

TEST(WriteReports, WritesTheFourFilesAtomically) {
  TempDir tmp;
  fs::path dir = tmp.path() / "compare";
  auto r = testing::make_compare_result();
  auto paths = write_reports(r, dir);
  std::set<std::string> expected{"report.json", "report.md", "report.html", "junit.xml"};
  std::set<std::string> returned;
  for (const auto& p : paths) {
    returned.insert(p.filename().string());
    EXPECT_EQ(p.parent_path(), dir);
    EXPECT_GT(fs::file_size(p), 0u) << p;
  }
  EXPECT_EQ(returned, expected);
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(dir)) on_disk.insert(e.path().filename().string());
  EXPECT_EQ(on_disk, expected) << "temp files left behind?";
  EXPECT_EQ(json::parse(util::read_file(dir / "report.json"))["verdict"], "fail");
  EXPECT_EQ(util::read_file(dir / "junit.xml"), JunitReporter().render(r));
  // Rewriting replaces the files in place, still with nothing left over.
  r.verdict = compare::Verdict::Pass;
  write_reports(r, dir);
  EXPECT_EQ(json::parse(util::read_file(dir / "report.json"))["verdict"], "pass");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 4);
}

TEST(Breakdown, FindingsAndOperatorsInEveryHumanFormat) {
  auto r = testing::make_compare_result();
  for (const char* f : {"console", "markdown", "html"}) {
    SCOPED_TRACE(f);
    const std::string out = make_reporter(f)->render(r);
    EXPECT_NE(out.find("Where the time went"), std::string::npos);
    EXPECT_NE(out.find("optimizer went from 10% to 16% of the step"), std::string::npos);
    EXPECT_NE(out.find("aten::mm"), std::string::npos);
  }
  json j = render_json(r);
  EXPECT_EQ(j["breakdown"]["findings"].size(), 2u);
  EXPECT_EQ(j["breakdown"]["ops"][0]["name"], "aten::mm");
  EXPECT_DOUBLE_EQ(j["breakdown"]["phases"][4]["variant_share"].get<double>(), 0.16);
}

}  // namespace
}  // namespace lockstep::reports
