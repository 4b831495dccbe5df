// The reporters of `lockstep diagnose` and `lockstep stages` (the interface:
// reports/reporter_for.h), one file per format.
//
// The diagnosis: console (the text on stdout), json (diagnosis.json, and stdout with --json),
// markdown (diagnosis.md) and html (diagnosis.html: the loss curve drawn by gnuplot with each
// event marked, the step time per rank, a causes table per event). JSON schema (the contract;
// extra fields may be added, never removed):
//   {"spikes": [{"step": k, "causes": [{"cause": "data"|"lr"|"grad"|"numerics"|"hardware"|"sync",
//                                      "score": x, "evidence": "..."}, ...]}, ...]}
// with causes sorted most likely first. Extras: "run", "name", "steps", "ranks", "status",
// "thresholds", "loss_judged_from" (the first step whose loss could be judged; 0: none),
// "too_short" (why a run too short to judge was not: "" when it was judged), and per spike
// "last_step", "kind", "explained", "detections".
//
// The stage split: console and json, on stdout only.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/diagnose/report.h"
#include "harness/diagnose/stages.h"
#include "reports/reporter_for.h"

namespace lockstep::reports {

using DiagnosisReporter = ReporterFor<diagnose::DiagnoseReport>;

class DiagnosisConsoleReporter : public DiagnosisReporter {
 public:
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const diagnose::DiagnoseReport& r) const override;
};

class DiagnosisJsonReporter : public DiagnosisReporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return "diagnosis.json"; }
  std::string render(const diagnose::DiagnoseReport& r) const override;  // diagnosis_json, indented
};

class DiagnosisMarkdownReporter : public DiagnosisReporter {
 public:
  std::string format() const override { return "markdown"; }
  std::string filename() const override { return "diagnosis.md"; }
  std::string render(const diagnose::DiagnoseReport& r) const override;
};

class DiagnosisHtmlReporter : public DiagnosisReporter {
 public:
  std::string format() const override { return "html"; }
  std::string filename() const override { return "diagnosis.html"; }
  // Never fails: a plot gnuplot cannot draw says why.
  std::string render(const diagnose::DiagnoseReport& r) const override;
};

nlohmann::json diagnosis_json(const diagnose::DiagnoseReport& r);

// console, json, markdown or html; throws std::invalid_argument for another.
std::unique_ptr<DiagnosisReporter> make_diagnosis_reporter(const std::string& format);

// Writes diagnosis.json, diagnosis.md and diagnosis.html into dir (created if missing), each
// atomically; returns their paths.
std::vector<std::filesystem::path> write_diagnosis_reports(const diagnose::DiagnoseReport& r,
                                                           const std::filesystem::path& dir);

using StagesReporter = ReporterFor<diagnose::StagePlan>;

class StagesConsoleReporter : public StagesReporter {
 public:
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const diagnose::StagePlan& p) const override;
};

class StagesJsonReporter : public StagesReporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return ""; }              // stdout only
  std::string render(const diagnose::StagePlan& p) const override;  // stages_json, indented
};

nlohmann::json stages_json(const diagnose::StagePlan& p);

}  // namespace lockstep::reports
