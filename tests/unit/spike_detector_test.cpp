// The loss-spike detector (harness/diagnose/spikes.h) on loss curves recorded from real runs of
// configs/baseline.toml (tests/data/spikes/*.tsv, written by bench/spike_bench's runs): each
// injected fault at steps from just after the detector's first judged step to the end of the
// schedule, in 200-, 120- and 60-step runs, must be found and its cause named first; clean runs at
// 20 seeds must give no loss or gradient event. The real-run counterparts (fewer steps, the real
// binary) are in diagnose_cli_test.cpp; the operating figures in bench/RESULTS.md.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "harness/diagnose/causes.h"
#include "harness/diagnose/report.h"
#include "reports/diagnose/reporters.h"

namespace lockstep::diagnose {
namespace {

// "# run NAME" starts a run; then "step loss grad_norm [lr batch_entropy batch_repeat_share]"
// lines: the fields the loss, gradient and cause detectors read on one rank ("nan" allowed).
std::map<std::string, RunRecords> read_recorded(const std::string& file) {
  std::ifstream in(std::string(LOCKSTEP_TEST_DATA) + "/spikes/" + file);
  EXPECT_TRUE(in.good()) << file;
  std::map<std::string, RunRecords> runs;
  RunRecords* run = nullptr;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# run ", 0) == 0) {
      run = &runs[line.substr(6)];
      run->ranks.resize(1);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::vector<double> v;
    for (std::string w; ss >> w;) v.push_back(std::stod(w));  // stod reads "nan" too
    if (!run || (v.size() != 3 && v.size() != 6)) {
      ADD_FAILURE() << file << ": " << line;
      continue;
    }
    StepRecord r;
    r.step = static_cast<int64_t>(v[0]);
    r.loss = v[1];
    r.grad_norm = v[2];
    if (v.size() == 6) r.lr = v[3], r.batch_entropy = v[4], r.batch_repeat_share = v[5];
    run->ranks[0].push_back(r);
  }
  return runs;
}

std::string events(const std::vector<Diagnosis>& ds) {
  std::string s;
  for (const auto& d : ds)
    s += "  step " + std::to_string(d.event.step) + " (" + d.event.kinds() + "), top " +
         (d.causes.empty() ? "-" : d.causes.front().cause) + "\n";
  return s.empty() ? "  no events\n" : s;
}

// "lr_spike_at-40-of-60" -> {"lr_spike_at", 40, 60}.
struct Fault {
  std::string key;
  int64_t step = 0, length = 0;
};
Fault parse_name(const std::string& name) {
  Fault f;
  const auto a = name.find('-'), b = name.find("-of-");
  f.key = name.substr(0, a);
  f.step = std::stoll(name.substr(a + 1, b - a - 1));
  f.length = std::stoll(name.substr(b + 4));
  return f;
}

const std::map<std::string, std::string> kCause{{"corrupt_batch_at", "data"},
                                                {"lr_spike_at", "lr"},
                                                {"grad_blowup_at", "grad"},
                                                {"nonfinite_at", "numerics"}};

}  // namespace

TEST(SpikeDetector, TwentyCleanSeedsGiveNoLossOrGradientEvent) {
  const auto runs = read_recorded("clean.tsv");
  int n200 = 0, n60 = 0;
  for (const auto& [name, run] : runs) {
    const auto ds = diagnose(run);
    for (const auto& d : ds)
      EXPECT_FALSE(d.event.has("loss") || d.event.has("grad_norm") || d.event.has("nonfinite"))
          << name << ": a clean run flagged\n"
          << events(ds);
    (run.main().size() == 200 ? n200 : n60) += 1;
  }
  EXPECT_EQ(n200, 20);
  EXPECT_EQ(n60, 20);
}

// Where an injected fault leaves no loss spike to find (measured, bench/RESULTS.md): an LR spike
// in the LR warmup (step <= 20: the loss rises under +6% if at all) or near the end of the
// schedule, where the LR is near min_lr and 30x of it barely moves the loss (step 180 and 195 of
// 200: under +10%; 50 and 55 of 60: +19% for one step and back, the size of this workload's own
// noise there). Every other recorded fault must be found and named first.
const std::set<std::string> kNoLossSpike{
    "lr_spike_at-10-of-200", "lr_spike_at-12-of-200",  "lr_spike_at-15-of-200",
    "lr_spike_at-20-of-200", "lr_spike_at-180-of-200", "lr_spike_at-195-of-200",
    "lr_spike_at-15-of-120", "lr_spike_at-10-of-60",   "lr_spike_at-15-of-60",
    "lr_spike_at-20-of-60",  "lr_spike_at-50-of-60",   "lr_spike_at-55-of-60"};

TEST(SpikeDetector, EachFaultAtEveryRecordedStepIsFoundAndNamedFirst) {
  const auto runs = read_recorded("faults.tsv");
  std::map<std::string, int> per_fault;
  int skipped = 0;
  for (const auto& [name, run] : runs) {
    if (kNoLossSpike.count(name)) {
      ++skipped;
      continue;
    }
    const Fault f = parse_name(name);
    // The LR of step k shows in the loss of step k+1; the others at k itself.
    const int64_t expect = f.key == "lr_spike_at" ? f.step + 1 : f.step;
    const auto ds = diagnose(run);
    const Diagnosis* hit = nullptr;
    for (const auto& d : ds)
      if (std::llabs(d.event.step - expect) <= 2) {
        hit = &d;
        break;
      }
    ASSERT_NE(hit, nullptr) << name << ": no event within 2 steps of " << expect << "\n"
                            << events(ds);
    EXPECT_EQ(hit->causes.front().cause, kCause.at(f.key)) << name << "\n" << events(ds);
    ++per_fault[f.key];
  }
  EXPECT_EQ(skipped, static_cast<int>(kNoLossSpike.size()));
  // 24 places per fault: 13 in a 200-step run, 4 in a 120-step one, 7 in a 60-step one.
  for (const auto& [key, cause] : kCause)
    EXPECT_EQ(per_fault[key], key == "lr_spike_at" ? 12 : 24) << key;
}

// A run too short to judge says so: "too short to judge", not "0 events".
TEST(SpikeDetector, ARunTooShortToJudgeSaysSo) {
  RunRecords run;
  run.ranks.resize(1);
  for (int64_t s = 1; s <= 6; ++s) {
    StepRecord r;
    r.step = s;
    r.loss = 6.2 - 0.05 * static_cast<double>(s);
    r.grad_norm = 1.5;
    r.lr = 1e-4 * static_cast<double>(s);
    run.ranks[0].push_back(r);
  }
  run.ranks[0][4].loss = 9.0;  // a jump no detector can judge without a trend before it
  const auto rep = diagnose_records(run);
  EXPECT_TRUE(rep.diagnoses.empty());
  EXPECT_TRUE(loss_coverage(run).none());
  const auto text_of = [](const DiagnoseReport& r) {
    return reports::DiagnosisConsoleReporter().render(r);
  };
  const std::string text = text_of(rep), md = reports::DiagnosisMarkdownReporter().render(rep);
  for (const auto* t : {&text, &md}) {
    EXPECT_NE(t->find("too short to judge"), std::string::npos) << *t;
    EXPECT_EQ(t->find("0 events"), std::string::npos) << *t;
  }
  EXPECT_NE(reports::DiagnosisHtmlReporter().render(rep).find("too short to judge"),
            std::string::npos);
  const auto j = reports::diagnosis_json(rep);
  EXPECT_EQ(j["loss_judged_from"], 0);
  EXPECT_NE(j["too_short"].get<std::string>().find("6 steps"), std::string::npos) << j.dump(2);
  // Three more steps: the 9th is judged, and the report says from where.
  for (int64_t s = 7; s <= 9; ++s) {
    StepRecord r = run.ranks[0].back();
    r.step = s;
    r.loss = 6.2 - 0.05 * static_cast<double>(s);
    run.ranks[0].push_back(r);
  }
  const auto judged = diagnose_records(run);
  EXPECT_EQ(loss_coverage(run).first_judged, 9);
  EXPECT_EQ(reports::diagnosis_json(judged)["too_short"], "");
  EXPECT_EQ(text_of(judged).find("too short"), std::string::npos) << text_of(judged);
}

// The trend, not a window median: a spike while the loss still falls steeply stands out.
TEST(SpikeDetector, RobustTrendFollowsAFallingLossAndIgnoresOneOutlier) {
  std::vector<double> x, y;
  for (int i = 1; i <= 12; ++i) x.push_back(i), y.push_back(6.0 - 0.1 * i);
  y[5] += 2.0;  // one outlier in the window barely moves a Theil-Sen line
  const Trend t = robust_trend(x, y, 13);
  EXPECT_NEAR(t.slope, -0.1, 1e-9);
  EXPECT_NEAR(t.value, 4.7, 1e-9);
  EXPECT_NEAR(t.scale, 0.0, 1e-9);
}

}  // namespace lockstep::diagnose
