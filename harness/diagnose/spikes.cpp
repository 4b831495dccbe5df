#include "harness/diagnose/spikes.h"

#include <algorithm>
#include <cstddef>
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

// The loss at one step against its local trend: rise = loss / trend - 1, and the robust z of
// log(loss / trend) against the recent prediction errors. NaN where the step is not judged.
struct Residual {
  static constexpr double kUnjudged = std::numeric_limits<double>::quiet_NaN();
  double trend = kUnjudged, rise = kUnjudged, z = kUnjudged;
  bool judged() const { return std::isfinite(rise); }
};

std::vector<Residual> loss_residuals(const std::vector<StepRecord>& main,
                                     const SpikeThresholds& t) {
  std::vector<Residual> out(main.size());
  std::vector<double> errors;  // log(loss / trend) of the judged steps so far, oldest first
  const auto usable = [](double x) { return std::isfinite(x) && x > 0; };
  for (size_t i = 0; i < main.size(); ++i) {
    if (!usable(main[i].loss)) continue;
    std::vector<double> xs, ys;  // the previous loss_window usable losses, newest first
    for (size_t j = i; j-- > 0 && ys.size() < t.loss_window;)
      if (usable(main[j].loss))
        xs.push_back(static_cast<double>(main[j].step)), ys.push_back(std::log(main[j].loss));
    if (ys.size() < std::max<size_t>(t.loss_min_history, 2)) continue;
    const Trend tr = robust_trend(xs, ys, static_cast<double>(main[i].step));
    const double e = std::log(main[i].loss) - tr.value;
    // The noise scale: the spread of the recent prediction errors, which (unlike the residuals
    // inside the window) includes what extrapolating a step costs; the window's own residuals
    // while there are too few errors yet.
    double scale = tr.scale;
    if (errors.size() >= t.loss_noise_min) {
      const std::vector<double> recent(
          errors.end() - static_cast<std::ptrdiff_t>(std::min(t.loss_noise_window, errors.size())),
          errors.end());
      scale = 1.4826 * stats::mad(recent);
    }
    Residual& r = out[i];
    r.trend = std::exp(tr.value);
    r.rise = std::expm1(e);
    r.z = scale > 0 ? e / scale : e > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    errors.push_back(e);
  }
  return out;
}

}  // namespace

Trend robust_trend(const std::vector<double>& x, const std::vector<double>& y, double at) {
  std::vector<double> slopes;
  for (size_t a = 0; a < x.size(); ++a)
    for (size_t b = a + 1; b < x.size(); ++b)
      if (x[b] != x[a]) slopes.push_back((y[b] - y[a]) / (x[b] - x[a]));
  Trend t;
  if (slopes.empty()) return t;
  t.slope = stats::median(slopes);
  std::vector<double> icpt;
  for (size_t k = 0; k < x.size(); ++k) icpt.push_back(y[k] - t.slope * x[k]);
  const double b = stats::median(icpt);
  t.value = b + t.slope * at;
  std::vector<double> resid;
  for (size_t k = 0; k < x.size(); ++k) resid.push_back(std::fabs(y[k] - (b + t.slope * x[k])));
  t.scale = 1.4826 * stats::median(resid);
  return t;
}

LossCoverage loss_coverage(const RunRecords& run, const SpikeThresholds& t) {
  LossCoverage c;
  c.needed = t.loss_min_history + 1;
  size_t finite = 0;
  for (const auto& r : run.main()) {
    c.steps = r.step;
    if (!std::isfinite(r.loss)) continue;
    if (++finite == c.needed) c.first_judged = r.step;
  }
  return c;
}

std::string too_short_text(const RunRecords& run, const SpikeThresholds& t) {
  const LossCoverage c = loss_coverage(run, t);
  if (!c.none()) return "";
  return "too short to judge loss spikes: " + std::to_string(c.steps) +
         (c.steps == 1 ? " step" : " steps") + ", and a step is judged against the trend of the " +
         std::to_string(t.loss_min_history) +
         " finite losses before it (non-finite losses were still checked)";
}

std::vector<Detection> detect(const RunRecords& run, const SpikeThresholds& t) {
  std::vector<Detection> out;
  const auto& main = run.main();
  // Loss (rank 0: the global loss) and gradient norm.
  std::vector<double> loss, gn;
  for (const auto& r : main) loss.push_back(r.loss), gn.push_back(r.grad_norm);
  const auto gz = stats::rolling_robust_z(gn, t.grad_window);
  const auto res = loss_residuals(main, t);
  for (size_t i = 0; i < main.size(); ++i) {
    const auto& r = main[i];
    if (!std::isfinite(r.loss)) {
      out.push_back({"nonfinite", r.step, 0, r.loss, window_median(loss, i, t.loss_window),
                     std::numeric_limits<double>::quiet_NaN()});
      continue;
    }
    // A one-step jump far outside the recent noise (a bad batch), or a rise that lasts into the
    // next step (a bad update: the weights, not one batch, went wrong).
    const Residual& e = res[i];
    if (e.judged()) {
      const Residual* n = i + 1 < res.size() && res[i + 1].judged() ? &res[i + 1] : nullptr;
      const bool jump = e.z >= t.loss_z && e.rise >= t.loss_min_rise;
      const bool sustained = n && std::min(e.rise, n->rise) >= t.loss_sustained_rise &&
                             std::min(e.z, n->z) >= t.loss_sustained_z;
      if (jump || sustained) out.push_back({"loss", r.step, 0, r.loss, e.trend, e.z});
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
