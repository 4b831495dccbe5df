#include "harness/diagnose/spikes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/runs/run_folder.h"
#include "harness/stats/statistics.h"

namespace lockstep::diagnose {
namespace fs = std::filesystem;

const std::vector<StepRecord>& RunRecords::main() const {
  static const std::vector<StepRecord> none;
  return ranks.empty() ? none : ranks.front();
}

const StepRecord* RunRecords::at(int64_t rank, int64_t step) const {
  if (rank < 0 || rank >= world()) return nullptr;
  const auto& v = ranks[static_cast<size_t>(rank)];
  auto it = std::lower_bound(v.begin(), v.end(), step,
                             [](const StepRecord& r, int64_t s) { return r.step < s; });
  return it != v.end() && it->step == step ? &*it : nullptr;
}

RunRecords read_run(const fs::path& dir) {
  const runs::RunFolder folder(dir);
  if (!fs::exists(folder.metrics()))
    throw std::runtime_error(folder.metrics().string() + ": no such file (is " + dir.string() +
                             " a run folder?)");
  RunRecords run;
  run.ranks = folder.read_rank_metrics();
  for (auto& v : run.ranks)
    std::stable_sort(v.begin(), v.end(),
                     [](const StepRecord& a, const StepRecord& b) { return a.step < b.step; });
  return run;
}

bool Event::has(const std::string& kind) const {
  return std::any_of(detections.begin(), detections.end(),
                     [&](const Detection& d) { return d.kind == kind; });
}

int64_t Event::loss_step() const {
  for (const char* k : {"loss", "grad_norm"})
    for (const auto& d : detections)
      if (d.kind == k || (std::string(k) == "loss" && d.kind == "nonfinite")) return d.step;
  return step;
}

std::string Event::kinds() const {
  std::string out;
  for (auto [kind, words] : {std::pair<const char*, const char*>{"nonfinite", "non-finite loss"},
                             {"loss", "loss spike"},
                             {"grad_norm", "gradient-norm spike"},
                             {"step_time", "step-time spike"}})
    if (has(kind)) out += (out.empty() ? "" : " + ") + std::string(words);
  return out;
}

namespace {

// Median of the `window` finite values before index i.
double window_median(const std::vector<double>& x, size_t i, size_t window) {
  std::vector<double> w;
  for (size_t j = i > window ? i - window : 0; j < i; ++j)
    if (std::isfinite(x[j])) w.push_back(x[j]);
  return w.empty() ? std::numeric_limits<double>::quiet_NaN() : stats::median(w);
}

size_t finite_before(const std::vector<double>& x, size_t i) {
  size_t n = 0;
  for (size_t j = 0; j < i; ++j) n += std::isfinite(x[j]) ? 1 : 0;
  return n;
}

}  // namespace

std::vector<Detection> detect(const RunRecords& run, const SpikeThresholds& t) {
  std::vector<Detection> out;
  const auto& main = run.main();
  // Loss (rank 0: the global loss) and gradient norm.
  std::vector<double> loss, gn;
  for (const auto& r : main) loss.push_back(r.loss), gn.push_back(r.grad_norm);
  const auto lz = stats::rolling_robust_z(loss, t.loss_window);
  const auto gz = stats::rolling_robust_z(gn, t.grad_window);
  for (size_t i = 0; i < main.size(); ++i) {
    const auto& r = main[i];
    if (!std::isfinite(r.loss)) {
      out.push_back({"nonfinite", r.step, 0, r.loss, window_median(loss, i, t.loss_window),
                     std::numeric_limits<double>::quiet_NaN()});
      continue;
    }
    if (finite_before(loss, i) >= t.loss_min_history && lz[i] >= t.loss_z) {
      const double med = window_median(loss, i, t.loss_window);
      if (r.loss - med >= t.loss_min_rise * std::fabs(med))
        out.push_back({"loss", r.step, 0, r.loss, med, lz[i]});
    }
    if (std::isfinite(r.grad_norm) && finite_before(gn, i) >= t.loss_min_history) {
      const double med = window_median(gn, i, t.grad_window);
      if (gz[i] >= t.grad_z && med > 0 && r.grad_norm >= t.grad_ratio * med)
        out.push_back({"grad_norm", r.step, 0, r.grad_norm, med, gz[i]});
    }
  }
  // Step time, per rank, over timed steps only.
  for (size_t rank = 0; rank < run.ranks.size(); ++rank) {
    std::vector<const StepRecord*> timed;
    std::vector<double> ms;
    for (const auto& r : run.ranks[rank])
      if (r.timed) timed.push_back(&r), ms.push_back(r.step_ms);
    const auto z = stats::rolling_robust_z(ms, t.time_window);
    for (size_t i = 0; i < ms.size(); ++i) {
      if (finite_before(ms, i) < t.time_min_history || !(z[i] >= t.time_z)) continue;
      const double med = window_median(ms, i, t.time_window);
      if (med > 0 && ms[i] >= t.time_ratio * med)
        out.push_back({"step_time", timed[i]->step, static_cast<int64_t>(rank), ms[i], med, z[i]});
    }
  }
  return out;
}

std::vector<Event> merge(std::vector<Detection> ds, int64_t gap) {
  std::stable_sort(ds.begin(), ds.end(), [](const Detection& a, const Detection& b) {
    return a.step != b.step ? a.step < b.step : a.rank < b.rank;
  });
  std::vector<Event> events;
  for (auto& d : ds) {
    if (events.empty() || d.step - events.back().last_step > gap) {
      Event e;
      e.step = e.last_step = d.step;
      events.push_back(std::move(e));
    }
    events.back().last_step = d.step;
    events.back().detections.push_back(std::move(d));
  }
  return events;
}

}  // namespace lockstep::diagnose
