#include "harness/compare/envelope.h"

#include <algorithm>
#include <cmath>
#include <deque>

namespace lockstep::compare {

std::vector<double> noise_envelope(const std::vector<double>& reference,
                                   const std::vector<std::vector<double>>& runs, int64_t window) {
  if (runs.empty()) return {};
  size_t n = reference.size();
  for (const auto& r : runs) n = std::min(n, r.size());
  window = std::max<int64_t>(1, window);
  std::vector<double> raw(n), out(n);
  bool broken = false;  // a non-finite value makes every later step unknown, never narrower
  for (size_t s = 0; s < n; ++s) {
    double m = 0;
    for (const auto& r : runs) {
      const double d = std::fabs(r[s] - reference[s]);
      if (!std::isfinite(d)) broken = true;
      m = std::max(m, d);
    }
    raw[s] = broken ? NAN : m;
  }
  // Running maximum over the trailing window, by a monotone deque of indices.
  std::deque<size_t> q;
  for (size_t s = 0; s < n; ++s) {
    if (std::isnan(raw[s])) {
      std::fill(out.begin() + static_cast<std::ptrdiff_t>(s), out.end(), NAN);
      break;
    }
    while (!q.empty() && raw[q.back()] <= raw[s]) q.pop_back();
    q.push_back(s);
    if (q.front() + static_cast<size_t>(window) <= s) q.pop_front();
    out[s] = raw[q.front()];
  }
  return out;
}

int64_t envelope_window(int64_t steps) {
  return std::max<int64_t>(1,
                           static_cast<int64_t>(std::llround(0.05 * static_cast<double>(steps))));
}

int64_t curve_window_start(int64_t steps, double pct) {
  const auto len = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(static_cast<double>(steps) * pct / 100.0 - 1e-9)));
  return std::max<int64_t>(1, steps - len + 1);
}

double mean_abs_diff(const std::vector<double>& a, const std::vector<double>& b, int64_t from,
                     int64_t to) {
  const auto n = static_cast<int64_t>(std::min(a.size(), b.size()));
  if (from < 1 || to > n || from > to) return NAN;
  double sum = 0;
  for (int64_t s = from; s <= to; ++s)
    sum += std::fabs(a[static_cast<size_t>(s - 1)] - b[static_cast<size_t>(s - 1)]);
  return std::isfinite(sum) ? sum / static_cast<double>(to - from + 1) : NAN;
}

double mean_over(const std::vector<double>& x, int64_t from, int64_t to) {
  if (from < 1 || to > static_cast<int64_t>(x.size()) || from > to) return NAN;
  double sum = 0;
  for (int64_t s = from; s <= to; ++s) sum += x[static_cast<size_t>(s - 1)];
  return std::isfinite(sum) ? sum / static_cast<double>(to - from + 1) : NAN;
}

}  // namespace lockstep::compare
