// The golden file (harness/compare/golden_file.h, docs/golden.md): format 2 round-trips bitwise,
// format-1 readers still read it, bad input names file, line and key, and golden mode judges by
// the file's own envelope where it carries one (issue 54).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/golden_file.h"
#include "harness/compare/golden_mode.h"
#include "harness/util/exit_codes.h"

using namespace lockstep;
using namespace lockstep::compare;

namespace {

GoldenFile sample(bool envelope) {
  GoldenFile g;
  g.format = 2;
  g.environment = {{"libtorch", "1.13.0"}, {"device", "cpu"}, {"compiler", "GCC 12.2.0"},
                   {"blas", "OpenBLAS (/usr/lib/libopenblas.so)"}, {"threads", "1"}};
  for (int s = 1; s <= 6; ++s) g.curve.push_back(6.0 / 7.0 * (7 - s) + 1e-9 * s);
  if (envelope) {
    g.envelope = {0, 1e-5, 2.5e-5, 2.5e-5, 4e-5, 4e-5};
    g.envelope_runs = 3;
    g.envelope_noise = 0.00390625;
    g.envelope_noise_source = "unit roundoff of bf16 (2^-8)";
    g.envelope_window = 1;
    g.exact_across = ExactAcross::Envelope;
  }
  return g;
}

// The reader before format 2 (read_golden of issue 14), as it was: '#' lines skipped, the first
// two numbers of every other line read.
std::vector<double> format1_reader(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> curve;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    long long step = 0;
    double loss = 0;
    if (!(ss >> step >> loss) || step != static_cast<long long>(curve.size()) + 1) return {};
    curve.push_back(loss);
  }
  return curve;
}

std::string error_of(const std::string& text) {
  try {
    parse_golden(text, "g.loss");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(GoldenFile, Format2RoundTripsBitwiseAndOldReadersStillReadIt) {
  for (bool envelope : {true, false}) {
    const GoldenFile g = sample(envelope);
    const std::string text = golden_text(g);
    EXPECT_EQ(text.rfind("# lockstep golden 2\n# libtorch = 1.13.0\n", 0), 0u) << text;
    const GoldenFile back = parse_golden(text, "g.loss");
    EXPECT_EQ(back.format, 2);
    EXPECT_EQ(back.curve, g.curve);  // bitwise: %.17g
    EXPECT_EQ(back.envelope, g.envelope);
    EXPECT_EQ(back.environment, g.environment);
    EXPECT_EQ(back.envelope_runs, g.envelope_runs);
    EXPECT_EQ(back.envelope_noise, g.envelope_noise);
    EXPECT_EQ(back.envelope_noise_source, g.envelope_noise_source);
    EXPECT_EQ(back.envelope_window, g.envelope_window);
    EXPECT_EQ(back.exact_across, g.exact_across);
    EXPECT_EQ(format1_reader(text), g.curve);
  }
  const GoldenFile old = parse_golden("# a comment\n1 5.5\n2 5.25 whatever\n", "old.loss");
  EXPECT_EQ(old.format, 1);
  EXPECT_EQ(old.curve, (std::vector<double>{5.5, 5.25}));
  EXPECT_FALSE(old.has_envelope());
  EXPECT_TRUE(old.environment.empty());
}

TEST(GoldenFile, BadInputNamesFileLineAndKey) {
  const std::string head = "# lockstep golden 2\n# threads = 1\n";
  EXPECT_EQ(error_of(head + "# blas_vendor = x\n1 5\n"),
            "g.loss:3: unknown header key \"blas_vendor\" in a format-2 golden file");
  EXPECT_EQ(error_of(head + "# exact_across_environments = maybe\n1 5\n"),
            "g.loss:3: exact_across_environments: expected \"tolerance\" or \"envelope\", got "
            "\"maybe\"");
  EXPECT_EQ(error_of(head + "# envelope_runs = three\n1 5\n"),
            "g.loss:3: envelope_runs: expected a positive integer, got \"three\"");
  EXPECT_EQ(error_of(head + "# envelope_runs = 3\n# envelope_noise = 0.5\n1 5 0\n2 4.5\n"),
            "g.loss:6: expected \"2 <loss> <envelope>\"");
  EXPECT_EQ(error_of(head + "# envelope_runs = 3\n1 5 0\n"),
            "g.loss:4: envelope_noise: the header declares envelope_runs but not the noise");
  EXPECT_EQ(error_of(head + "1 5 0.1\n"), "g.loss:3: expected \"1 <loss>\"");
  EXPECT_EQ(error_of("# lockstep golden 3\n1 5\n"),
            "g.loss:1: golden file format \"3\" is not one this build reads (1: \"step loss\" "
            "lines, 2)");
  EXPECT_EQ(error_of(head), "g.loss: no losses");
}

TEST(GoldenFile, EnvironmentsDifferOnlyOnKeysBothRecord) {
  const auto g = sample(false).environment;
  auto here = g;
  EXPECT_TRUE(environment_differences(g, here).empty());
  here["threads"] = "2";
  here["host"] = "elsewhere";  // not a golden key
  here.erase("blas");          // unknown here: not compared
  EXPECT_EQ(environment_differences(g, here), (std::vector<std::string>{"threads"}));
}

// Golden mode's rule: the file's envelope judges an approximate class; an exact one only across
// environments and when the file says so; an old file falls back to the seed band.
TEST(GoldenMode, TheFilesEnvelopeJudgesWhereItMay) {
  auto here = sample(true).environment;
  here["threads"] = "2";
  const GoldenFile g = sample(true);
  const auto approx = golden_judgement(g, config::Knob::Approximate, here, 3.0);
  ASSERT_TRUE(approx.envelope.has_value());
  EXPECT_EQ(approx.envelope->values, g.envelope);
  EXPECT_EQ(approx.envelope->factor, 3.0);
  EXPECT_EQ(approx.envelope->noise_seeds, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(approx.exact_by_envelope);
  EXPECT_EQ(approx.source.differing, (std::vector<std::string>{"threads"}));

  const auto exact = golden_judgement(g, config::Knob::Exact, here, 3.0);
  EXPECT_TRUE(exact.exact_by_envelope);
  EXPECT_TRUE(exact.envelope.has_value());
  const auto same_env = golden_judgement(g, config::Knob::Exact, g.environment, 3.0);
  EXPECT_FALSE(same_env.exact_by_envelope);  // one environment: the tolerance (bitwise, really)
  EXPECT_FALSE(same_env.envelope.has_value());
  GoldenFile says_tolerance = g;
  says_tolerance.exact_across = ExactAcross::Tolerance;
  EXPECT_FALSE(golden_judgement(says_tolerance, config::Knob::Exact, here, 3.0).envelope);

  const GoldenFile old = parse_golden("1 5.5\n2 5.25\n", "old.loss");
  const auto fallback = golden_judgement(old, config::Knob::Approximate, here, 3.0);
  EXPECT_FALSE(fallback.envelope.has_value());
  EXPECT_EQ(fallback.source.format, 1);
  EXPECT_NE(fallback.source.judged_by.find("fallback for old files"), std::string::npos)
      << fallback.source.judged_by;
}

// The envelope's values as the file holds them: within c x E passes, a 2% drift fails.
TEST(GoldenMode, AGoldenEnvelopeFailsA2PercentDrift) {
  const GoldenFile g = sample(true);
  const auto j = golden_judgement(g, config::Knob::Approximate, g.environment, 3.0);
  std::vector<double> near = g.curve, drifted = g.curve;
  for (size_t i = 0; i < near.size(); ++i) {
    near[i] += 2.0 * g.envelope[i];  // inside 3 x E
    drifted[i] *= 1.02;
  }
  auto ok = check_alignment(g.curve, near, 0, 1e-3, config::Knob::Approximate, std::nullopt,
                            j.envelope, 20);
  EXPECT_STREQ(to_string(ok.rule), "envelope");
  EXPECT_TRUE(ok.aligned) << ok.explanation;
  ASSERT_TRUE(ok.envelope.has_value());
  EXPECT_EQ(ok.envelope->at_check, 4e-5);
  EXPECT_EQ(ok.envelope->runs, 3);
  auto bad = check_alignment(g.curve, drifted, 0, 1e-3, config::Knob::Approximate, std::nullopt,
                             j.envelope, 20);
  EXPECT_FALSE(bad.aligned) << bad.explanation;
  golden_envelope_wording(bad, false);
  EXPECT_EQ(bad.explanation.rfind("approximate knob, by the golden file's noise envelope: ", 0), 0u)
      << bad.explanation;
}
