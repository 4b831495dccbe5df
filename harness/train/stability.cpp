#include "harness/train/stability.h"

#include <algorithm>

#include <cmath>
#include <vector>

#include "harness/stats/statistics.h"

namespace lockstep::train {
namespace {

double robust_z(const std::deque<double>& hist, double x) {
  std::vector<double> v(hist.begin(), hist.end());
  const double med = stats::median(v), mad = stats::mad(v);
  if (mad <= 0) return x > med * (1 + 1e-6) ? INFINITY : 0;
  return (x - med) / (1.4826 * mad);
}

}  // namespace

bool OutlierWindow::is_outlier(double loss, double grad_norm, double z) {
  bool outlier = !std::isfinite(loss) || !std::isfinite(grad_norm);
  if (!outlier && losses_.size() >= 10)
    outlier = robust_z(losses_, loss) > z || robust_z(norms_, grad_norm) > z;
  if (!outlier) {
    losses_.push_back(loss);
    norms_.push_back(grad_norm);
    if (losses_.size() > window_) losses_.pop_front(), norms_.pop_front();
  }
  return outlier;
}

void OutlierWindow::restore(const std::vector<double>& losses, const std::vector<double>& norms) {
  const size_t n = std::min(losses.size(), norms.size());
  const size_t first = n > window_ ? n - window_ : 0;
  losses_.assign(losses.begin() + static_cast<std::ptrdiff_t>(first),
                 losses.begin() + static_cast<std::ptrdiff_t>(n));
  norms_.assign(norms.begin() + static_cast<std::ptrdiff_t>(first),
                norms.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace lockstep::train
