#include "harness/history/changepoint.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include "harness/stats/statistics.h"

namespace lockstep::history {
namespace {

// L1 cost of every prefix y[0..j), j = 0..n: sum |y_i - median| (any median minimizes it).
std::vector<double> prefix_costs(const double* y, size_t n) {
  std::vector<double> cost(n + 1, 0.0), sorted;
  sorted.reserve(n);
  for (size_t j = 0; j < n; ++j) {
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), y[j]), y[j]);
    const double med = sorted[sorted.size() / 2];
    double c = 0;
    for (double v : sorted) c += std::fabs(v - med);
    cost[j + 1] = c;
  }
  return cost;
}

struct Split {
  size_t k = 0;     // first index of the right side
  double gain = 0;  // cost(all) - cost(left) - cost(right)
};

Split best_split(const std::vector<double>& y, size_t min_segment) {
  const size_t n = y.size();
  Split best;
  if (n < 2 * min_segment) return best;
  const auto left = prefix_costs(y.data(), n);
  const std::vector<double> reversed(y.rbegin(), y.rend());
  const auto right = prefix_costs(reversed.data(), n);  // right[m]: the last m points
  const double eps = 1e-12 * (1 + left[n]);
  for (size_t k = min_segment; k + min_segment <= n; ++k) {
    const double gain = left[n] - left[k] - right[n - k];
    if (gain > best.gain + eps) best = {k, gain};
  }
  return best;
}

// Permutation p of a best-split gain. Stops early once p > alpha is certain; the value returned
// is then a lower bound (still > alpha).
double permutation_p(std::vector<double> y, double observed, const ChangePointOptions& opt,
                     uint64_t seed) {
  stats::SplitMix64 rng(seed);
  const double allowed = opt.alpha * (opt.permutations + 1) - 1;  // exceedances still significant
  const double tol = 1e-12 * (1 + std::fabs(observed));
  int exceed = 0;
  for (int b = 0; b < opt.permutations; ++b) {
    for (size_t i = y.size() - 1; i > 0; --i) std::swap(y[i], y[rng.index(i + 1)]);  // Fisher-Yates
    if (best_split(y, opt.min_segment).gain >= observed - tol && ++exceed > allowed) break;
  }
  return (1.0 + exceed) / (1.0 + opt.permutations);
}

struct Found {
  size_t index;
  double p;
};

void search(const std::vector<double>& y, size_t lo, size_t hi, const ChangePointOptions& opt,
            std::vector<Found>& found) {
  if (hi - lo < 2 * opt.min_segment) return;
  const std::vector<double> seg(y.begin() + static_cast<std::ptrdiff_t>(lo),
                                y.begin() + static_cast<std::ptrdiff_t>(hi));
  const Split s = best_split(seg, opt.min_segment);
  if (s.gain <= 0) return;  // a constant segment
  const double p =
      permutation_p(seg, s.gain, opt, opt.seed ^ (0x9E3779B97F4A7C15ull * (lo + 1)) ^ hi);
  if (p > opt.alpha) return;
  found.push_back({lo + s.k, p});
  search(y, lo, lo + s.k, opt, found);
  search(y, lo + s.k, hi, opt, found);
}

std::vector<double> slice(const std::vector<double>& x, size_t lo, size_t hi) {
  return {x.begin() + static_cast<std::ptrdiff_t>(lo), x.begin() + static_cast<std::ptrdiff_t>(hi)};
}

}  // namespace

std::vector<ChangePoint> detect_changes(const std::vector<double>& x,
                                        const std::vector<std::string>& commits, Better better,
                                        const ChangePointOptions& opt) {
  if (x.size() != commits.size())
    throw std::invalid_argument("detect_changes: one commit per value");
  if (!stats::all_finite(x)) throw std::invalid_argument("detect_changes: values must be finite");
  if (opt.min_segment < 1 || opt.permutations < 1)
    throw std::invalid_argument("detect_changes: bad options");
  const bool positive = std::all_of(x.begin(), x.end(), [](double v) { return v > 0; });
  std::vector<double> y = x;
  if (positive)
    for (double& v : y) v = std::log(v);

  std::vector<Found> found;
  search(y, 0, y.size(), opt, found);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.index < b.index; });

  // Measure each change between its neighbouring segments; merge away the weakest failing one.
  const auto median_pct =
      stats::pct_change([](const std::vector<double>& v) { return stats::median(v); });
  for (;;) {
    std::vector<ChangePoint> out;
    size_t weakest = found.size();
    double weakest_size = INFINITY;
    for (size_t i = 0; i < found.size(); ++i) {
      const size_t lo = i == 0 ? 0 : found[i - 1].index, at = found[i].index;
      const size_t hi = i + 1 < found.size() ? found[i + 1].index : x.size();
      const auto before = slice(x, lo, at), after = slice(x, at, hi);
      ChangePoint c;
      c.index = at;
      c.commit = commits[at];
      c.previous_commit = commits[at - 1];
      c.before = stats::median(before);
      c.after = stats::median(after);
      c.size_pct = 100.0 * (c.after / c.before - 1.0);
      c.p_value = found[i].p;
      const auto ci =
          stats::bootstrap_ci(before, after, median_pct, opt.bootstrap, opt.level, opt.seed ^ at);
      c.ci_lo = ci.lo;
      c.ci_hi = ci.hi;
      c.regression = better == Better::Higher ? c.size_pct < 0 : c.size_pct > 0;
      const bool ok =
          ci.valid() && (ci.lo > 0 || ci.hi < 0) && std::fabs(c.size_pct) >= opt.min_change_pct;
      if (!ok && std::fabs(c.size_pct) < weakest_size) {
        weakest = i;
        weakest_size = std::fabs(c.size_pct);
      }
      out.push_back(c);
    }
    if (weakest == found.size()) return out;
    found.erase(found.begin() + static_cast<std::ptrdiff_t>(weakest));
  }
}

std::vector<LossDrift> detect_loss_drift(const std::vector<double>& loss,
                                         const std::vector<std::string>& commits,
                                         const std::vector<std::string>& config_hashes,
                                         double tolerance) {
  if (loss.size() != commits.size() || loss.size() != config_hashes.size())
    throw std::invalid_argument("detect_loss_drift: one commit and config hash per value");
  std::vector<LossDrift> out;
  std::map<std::string, size_t> last;  // config hash -> its latest finite point
  for (size_t i = 0; i < loss.size(); ++i) {
    if (!std::isfinite(loss[i])) continue;
    auto it = last.find(config_hashes[i]);
    if (it != last.end()) {
      const size_t j = it->second;
      const double d = loss[i] - loss[j];
      if (std::fabs(d) > tolerance)
        out.push_back(
            {i, commits[i], commits[j], loss[j], loss[i], d, d > 0, commits[i] == commits[j]});
    }
    last[config_hashes[i]] = i;
  }
  return out;
}

}  // namespace lockstep::history
