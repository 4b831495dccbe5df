// `lockstep history report`: per config and machine, the recorded runs' tokens/s, MFU, P99 step
// latency and final loss over commits, with change points (harness/history/changepoint.h) and
// loss drift flagged separately; exit code 1 when a regression (a speed change for the worse, or
// a loss drift upwards) starts within the last `window` commits of a series. Rendered by
// reports/history/reporters.h as report.json, report.md and report.html (trend plots with the
// flagged points marked).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/history/changepoint.h"
#include "harness/history/store.h"

namespace lockstep::history {

struct MetricInfo {
  std::string key;    // "tokens_per_sec" | "mfu" | "p99_ms" | "final_loss"
  std::string label;  // "tokens/s", ...
  Better better;
  bool speed;  // false: final_loss, judged by loss drift instead of change points
};
const std::vector<MetricInfo>& metric_infos();  // in report order
const MetricInfo& metric_info(
    const std::string& key);  // throws std::invalid_argument listing the keys
// The metric's label in a series of `workload` ("train" | "serve"): a serving series' P99 is
// request latency, not step latency.
std::string metric_label(const std::string& key, const std::string& workload);

struct ReportOptions {
  std::string config;                // only this config name ("" = all)
  std::vector<std::string> metrics;  // keys; empty = all four
  int window = 5;                    // the last N commits that can fail the report
  double loss_tolerance = 0;         // |delta final loss| above this is drift (0 = any change)
  ChangePointOptions changepoint;
};

// One flagged point: a speed change or a loss drift.
struct Flag {
  std::string kind;      // "speed" | "loss drift"
  std::string metric;    // metric key
  std::string workload;  // the series' ("train" | "serve")
  size_t index = 0;    // into Series::points
  std::string commit, previous_commit, recorded_at;
  double before = 0, after = 0;                 // segment medians (speed) or the two losses (drift)
  double size_pct = 0;                          // percent change
  std::optional<double> ci_lo, ci_hi, p_value;  // speed only
  double delta = 0;                             // drift: after - before
  bool regression = false;
  bool in_window = false;
  std::string note;  // e.g. "same commit: not deterministic"
};

struct MetricSeries {
  std::string metric;
  std::vector<size_t> index;  // points that have a value (MFU may be unknown)
  std::vector<double> value;
};

// One config (name and hash: the same effective config, so the same seed) on one machine (host
// and device), oldest point first. Editing a config starts a new series: that is a different
// experiment, not a regression of the code.
struct Series {
  std::string config_name, config_hash, host, device;
  std::string workload = "train";  // "serve": requests, not steps (SeriesPoint::workload)
  std::vector<SeriesPoint> points;
  std::vector<std::string> window_commits;  // the last `window` distinct commits
  std::vector<MetricSeries> metrics;
  std::vector<Flag> flags;  // in index order
  int regressions_in_window = 0;
};

struct Report {
  std::string history_path, generated_at;
  ReportOptions options;  // metrics filled in
  std::vector<Series> series;
  int regressions_in_window = 0;
  int exit_code = 0;  // 1 when regressions_in_window > 0
};

// Groups points (oldest first) by config (name and hash) and machine and judges each series.
Report build_report(const std::vector<SeriesPoint>& points, const ReportOptions& opt,
                    const std::string& history_path = "");

}  // namespace lockstep::history
