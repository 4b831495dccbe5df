#include "harness/scale/amdahl.h"

#include <Eigen/Dense>
#include <algorithm>
#include <limits>
#include <set>
#include "harness/util/format.h"

namespace lockstep::scale {
namespace {

std::string g(double x) {
  return util::format_number("%.4g", x);
}

}  // namespace

double amdahl_speedup(double p, double n) {
  return 1.0 / ((1.0 - p) + p / n);
}

double AmdahlFit::predict(double n) const {
  if (!ok || !(n > 0)) return NAN;
  return amdahl_speedup(p, n) / amdahl_speedup(p, ref_n);
}

double AmdahlFit::predict_vs_one(double n) const {
  if (!ok || !(n > 0)) return NAN;
  return amdahl_speedup(p, n);
}

double AmdahlFit::max_speedup() const {
  if (!ok) return NAN;
  return p >= 1 ? std::numeric_limits<double>::infinity() : 1.0 / (1.0 - p);
}

AmdahlFit fit_amdahl(const std::vector<SpeedupPoint>& points) {
  AmdahlFit f;
  std::vector<SpeedupPoint> use;
  int dropped = 0;
  for (const auto& pt : points) {
    if (std::isfinite(pt.n) && pt.n >= 1 && std::isfinite(pt.speedup) && pt.speedup > 0)
      use.push_back(pt);
    else
      ++dropped;
  }
  if (dropped > 0)
    f.notes.push_back(std::to_string(dropped) +
                      " point(s) without a finite positive speed-up left out of the fit");
  std::set<double> sizes;
  for (const auto& pt : use) sizes.insert(pt.n);
  f.points = static_cast<int>(use.size());
  f.sizes = static_cast<int>(sizes.size());
  if (sizes.size() < 2) {
    f.notes.push_back(sizes.empty()
                          ? "no fit: no measured point"
                          : "no fit: only N=" + g(*sizes.begin()) +
                                " measured; Amdahl's P needs speed-ups at two or more rank counts");
    return f;
  }
  f.ref_n = *sizes.begin();

  // y = 1/s = a + b * (1/N): ordinary least squares on the design matrix [1, 1/N].
  const Eigen::Index m = static_cast<Eigen::Index>(use.size());
  Eigen::MatrixXd A(m, 2);
  Eigen::VectorXd y(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    A(i, 0) = 1.0;
    A(i, 1) = 1.0 / use[static_cast<size_t>(i)].n;
    y(i) = 1.0 / use[static_cast<size_t>(i)].speedup;
  }
  const Eigen::Vector2d ab = A.colPivHouseholderQr().solve(y);
  f.a = ab(0);
  f.b = ab(1);
  f.ok = true;
  const double t1 = f.a + f.b;  // the fitted one-rank step time, normalised to T(ref_n)
  if (t1 > 0) {
    f.p_raw = f.b / t1;
  } else {
    f.p_raw = f.b > 0 ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity();
    f.notes.push_back("the fitted one-rank step time is not positive (a + b = " + g(t1) +
                      "): the points do not follow Amdahl's law");
  }
  f.p = std::clamp(f.p_raw, 0.0, 1.0);
  f.clamped = f.p != f.p_raw;
  f.superlinear = f.p_raw > 1;
  f.slowdown = f.p_raw < 0;
  if (f.superlinear)
    f.notes.push_back("superlinear speed-up: fitted P = " + g(f.p_raw) +
                      " > 1, clamped to 1 (more than N times faster on N ranks; suspect caching or "
                      "shared-core effects)");
  if (f.slowdown)
    f.notes.push_back("slowdown: fitted P = " + g(f.p_raw) +
                      " < 0, clamped to 0 (more ranks were slower)");

  // Goodness of fit: R^2 on 1/s (only meaningful with 3+ sizes), residuals on s with the clamped P.
  double max_rel = 0;
  for (const auto& pt : use)
    max_rel = std::max(max_rel, std::abs(f.predict(pt.n) - pt.speedup) / pt.speedup);
  f.max_rel_residual = max_rel;
  if (sizes.size() >= 3) {
    const Eigen::VectorXd res = y - A * ab;
    const double ss_res = res.squaredNorm();
    const double ss_tot = (y.array() - y.mean()).matrix().squaredNorm();
    f.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : (ss_res <= 1e-24 ? 1.0 : NAN);
    const bool bad_r2 = !(f.r2 >= kPoorR2);
    const bool bad_res = max_rel > kPoorResidual;
    f.poor = bad_r2 || bad_res;
    if (f.poor)
      f.notes.push_back(
          "poor fit: R^2 = " + g(f.r2) + ", largest speed-up residual " + g(100 * max_rel) +
          "%: the measurements do not follow Amdahl's law closely; treat the predictions as rough");
  } else {
    if (f.clamped && max_rel > kPoorResidual) f.poor = true;
    f.notes.push_back(
        "two rank counts determine the curve exactly: no goodness of fit (measure three or more to "
        "check the model)");
  }
  return f;
}

}  // namespace lockstep::scale
