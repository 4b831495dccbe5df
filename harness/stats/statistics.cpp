#include "harness/stats/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace lockstep::stats {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMadToSigma = 1.4826;  // 1 / Phi^-1(3/4): MAD -> sigma for normal data

bool any_nan(const std::vector<double>& x) {
  return std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); });
}

// numpy's _lerp: a + (b-a)*t, computed from the nearer end. Equal ends (including equal
// infinities) give that value.
double lerp(double a, double b, double t) {
  if (t == 0 || a == b) return a;
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

// Type-7 percentile of a sorted, NaN-free, non-empty vector; q in [0,100].
double sorted_percentile(const std::vector<double>& s, double q) {
  const size_t n = s.size();
  const double h = (q / 100) * static_cast<double>(n - 1);  // numpy: (n-1) * (q/100)
  const double fl = std::floor(h);
  const size_t lo = std::min(static_cast<size_t>(fl), n - 1);
  const size_t hi = std::min(lo + 1, n - 1);
  return lerp(s[lo], s[hi], h - fl);
}

void check_bootstrap_args(const TwoSampleStat& stat, int resamples, double level) {
  if (!stat) throw std::invalid_argument("bootstrap: empty statistic");
  if (resamples < 1) throw std::invalid_argument("bootstrap: resamples must be >= 1");
  if (!(level > 0 && level < 1)) throw std::invalid_argument("bootstrap: level must be in (0,1)");
}

// The percentile interval of the finite bootstrap replicates; invalid if more than half of the
// `resamples` replicates were non-finite.
Interval percentile_interval(std::vector<double> finite, int resamples, double level) {
  if (finite.empty() || 2 * finite.size() < static_cast<size_t>(resamples)) return {};
  std::sort(finite.begin(), finite.end());
  Interval ci;
  ci.lo = sorted_percentile(finite, 100 * (1 - level) / 2);
  ci.hi = sorted_percentile(finite, 100 * (1 + level) / 2);
  return ci;
}

// Counts of U over all C(m+n, m) orderings of m a's and n b's (no ties), index = U.
std::vector<uint64_t> mann_whitney_counts(size_t m, size_t n) {
  // f[i][j][u]: orderings of i a's and j b's with U = u. The largest element is either an a
  // (beating all j b's: f[i-1][j][u-j]) or a b (f[i][j-1][u]).
  std::vector<std::vector<std::vector<uint64_t>>> f(m + 1,
                                                    std::vector<std::vector<uint64_t>>(n + 1));
  for (size_t i = 0; i <= m; ++i) {
    for (size_t j = 0; j <= n; ++j) {
      std::vector<uint64_t>& c = f[i][j];
      c.assign(i * j + 1, 0);
      if (i == 0 || j == 0) {
        c[0] = 1;
        continue;
      }
      const std::vector<uint64_t>& with_a = f[i - 1][j];
      for (size_t u = 0; u < with_a.size(); ++u) c[u + j] += with_a[u];
      const std::vector<uint64_t>& with_b = f[i][j - 1];
      for (size_t u = 0; u < with_b.size(); ++u) c[u] += with_b[u];
    }
  }
  return f[m][n];
}

}  // namespace

double mean(const std::vector<double>& x) {
  if (x.empty()) return kNaN;
  const double n = static_cast<double>(x.size());
  double sum = 0;
  for (double v : x) sum += v;
  double m = sum / n;
  if (std::isfinite(m)) {  // second pass removes most of the rounding error of the first
    double resid = 0;
    for (double v : x) resid += v - m;
    m += resid / n;
  }
  return m;
}

double median(std::vector<double> x) {
  if (x.empty() || any_nan(x)) return kNaN;
  const size_t n = x.size();
  const auto mid = x.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(x.begin(), mid, x.end());
  const double upper = *mid;
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(x.begin(), mid);
  return lower == upper ? upper : lower / 2 + upper / 2;  // == (lower+upper)/2, without overflow
}

double stddev(const std::vector<double>& x) {
  if (x.size() < 2) return kNaN;
  const double m = mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(x.size() - 1));
}

double percentile(std::vector<double> x, double q) {
  if (!(q >= 0 && q <= 100)) throw std::invalid_argument("percentile: q must be in [0,100]");
  if (x.empty() || any_nan(x)) return kNaN;
  std::sort(x.begin(), x.end());
  return sorted_percentile(x, q);
}

double mad(const std::vector<double>& x) {
  const double m = median(x);
  if (std::isnan(m)) return kNaN;
  std::vector<double> dev;
  dev.reserve(x.size());
  for (double v : x) dev.push_back(std::fabs(v - m));
  return median(std::move(dev));
}

bool all_finite(const std::vector<double>& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool Interval::valid() const {
  return std::isfinite(lo) && std::isfinite(hi) && lo <= hi;
}

Interval bootstrap_ci(const std::vector<double>& a, const std::vector<double>& b,
                      const TwoSampleStat& stat, int resamples, double level, uint64_t seed) {
  check_bootstrap_args(stat, resamples, level);
  if (a.empty() || b.empty()) return {};
  SplitMix64 rng(seed);
  std::vector<double> ra(a.size()), rb(b.size()), finite;
  finite.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (double& v : ra) v = a[rng.index(a.size())];
    for (double& v : rb) v = b[rng.index(b.size())];
    const double s = stat(ra, rb);
    if (std::isfinite(s)) finite.push_back(s);
  }
  return percentile_interval(std::move(finite), resamples, level);
}

Interval bootstrap_ci_grouped(const std::vector<std::vector<double>>& a,
                              const std::vector<std::vector<double>>& b, const TwoSampleStat& stat,
                              int resamples, double level, uint64_t seed) {
  check_bootstrap_args(stat, resamples, level);
  const auto no_values = [](const std::vector<std::vector<double>>& g) {
    return std::all_of(g.begin(), g.end(), [](const std::vector<double>& v) { return v.empty(); });
  };
  if (no_values(a) || no_values(b)) return {};  // also true for no groups
  SplitMix64 rng(seed);
  std::vector<double> pa, pb, finite;
  finite.reserve(static_cast<size_t>(resamples));
  const auto pool = [&rng](const std::vector<std::vector<double>>& groups,
                           std::vector<double>& out) {
    out.clear();
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<double>& drawn = groups[rng.index(groups.size())];
      out.insert(out.end(), drawn.begin(), drawn.end());
    }
  };
  for (int r = 0; r < resamples; ++r) {
    pool(a, pa);
    pool(b, pb);
    const double s = stat(pa, pb);
    if (std::isfinite(s)) finite.push_back(s);
  }
  return percentile_interval(std::move(finite), resamples, level);
}

TwoSampleStat pct_change(std::function<double(const std::vector<double>&)> f) {
  if (!f) throw std::invalid_argument("pct_change: empty function");
  return [f = std::move(f)](const std::vector<double>& a, const std::vector<double>& b) {
    const double fa = f(a), fb = f(b);
    if (fa == 0 || !std::isfinite(fa) || !std::isfinite(fb)) return kNaN;
    return 100 * (fb / fa - 1);
  };
}

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney res;
  if (a.empty() || b.empty() || any_nan(a) || any_nan(b)) return res;
  const size_t na = a.size(), nb = b.size(), n = na + nb;

  // Midranks of the pooled sample; U_a = R_a - na(na+1)/2.
  std::vector<std::pair<double, bool>> pooled;  // (value, from a)
  pooled.reserve(n);
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  double rank_sum_a = 0;
  double tie_term = 0;  // sum over tie groups of t^3 - t
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_a += midrank;
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dna = static_cast<double>(na), dnb = static_cast<double>(nb);
  res.u = rank_sum_a - dna * (dna + 1) / 2;

  if (!ties && na <= kMannWhitneyExactMaxN && nb <= kMannWhitneyExactMaxN) {
    const std::vector<uint64_t> counts = mann_whitney_counts(na, nb);
    const size_t u = static_cast<size_t>(std::llround(res.u));
    uint64_t total = 0, le = 0, ge = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      total += counts[k];
      if (k <= u) le += counts[k];
      if (k >= u) ge += counts[k];
    }
    const double p = 2 * static_cast<double>(std::min(le, ge)) / static_cast<double>(total);
    res.p_two_sided = std::min(1.0, p);
    res.exact = true;
    return res;
  }

  const double dn = static_cast<double>(n);
  const double mu = dna * dnb / 2;
  const double var = dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (!(var > 0)) {  // every value equal: no evidence either way
    res.p_two_sided = 1;
    return res;
  }
  const double z = std::max(std::fabs(res.u - mu) - 0.5, 0.0) / std::sqrt(var);
  res.p_two_sided = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return res;
}

std::vector<double> rolling_robust_z(const std::vector<double>& x, size_t window) {
  std::vector<double> z(x.size(), kNaN);
  std::vector<double> w;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    w.clear();
    for (size_t k = i - std::min(i, window); k < i; ++k)
      if (std::isfinite(x[k])) w.push_back(x[k]);
    if (w.size() < 3) continue;
    const double m = median(w);
    const double d = mad(w);
    if (d == 0) {
      z[i] = x[i] == m ? 0 : (x[i] > m ? kInf : -kInf);
    } else {
      z[i] = (x[i] - m) / (kMadToSigma * d);
    }
  }
  return z;
}

double normal_quantile(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  // Acklam (2003): rational approximations on the central region and the two tails.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  constexpr double lo = 0.02425, hi = 1 - lo;
  double x;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= hi) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  // One Halley step on Phi(x) - p, Phi(x) = erfc(-x/sqrt(2))/2: full double precision.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * 2.5066282746310002 * std::exp(x * x / 2);  // sqrt(2 pi)
  return x - u / (1 + x * u / 2);
}

double pooled_cv_pct(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2 || !all_finite(a) || !all_finite(b)) return kNaN;
  const double ma = mean(a), mb = mean(b);
  if (ma == 0 || mb == 0) return kNaN;
  const double cva = stddev(a) / ma, cvb = stddev(b) / mb;
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  return 100 * std::sqrt(((na - 1) * cva * cva + (nb - 1) * cvb * cvb) / (na + nb - 2));
}

double min_detectable_effect(double sigma, size_t na, size_t nb, double alpha, double power) {
  if (!std::isfinite(sigma) || sigma < 0 || na < 2 || nb < 2) return kNaN;
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return kNaN;
  const double factor = normal_quantile(1 - alpha / 2) + normal_quantile(power);
  return factor * sigma *
         std::sqrt(1.0 / static_cast<double>(na) + 1.0 / static_cast<double>(nb));
}

namespace {

// Continued fraction of the incomplete beta function (Numerical Recipes' betacf, modified Lentz).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b), x in [0, 1].
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || std::isnan(df) || df <= 0) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));  // P(T > |t|)
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (std::isnan(p) || std::isnan(df) || p < 0 || p > 1 || df <= 0) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
  for (int i = 0; i < 2000 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

PairedT paired_t(const std::vector<double>& d, double level) {
  PairedT r;
  r.n = d.size();
  if (d.size() < 2 || !all_finite(d)) return r;
  r.mean = mean(d);
  r.sd = stddev(d);
  const double df = static_cast<double>(d.size() - 1);
  const double se = r.sd / std::sqrt(static_cast<double>(d.size()));
  if (se == 0) {
    r.p_two_sided = r.mean == 0 ? 1.0 : 0.0;
    r.ci = Interval{r.mean, r.mean};
    return r;
  }
  r.p_two_sided = std::min(1.0, 2 * student_t_cdf(-std::fabs(r.mean / se), df));
  const double half = student_t_quantile(0.5 + level / 2, df) * se;
  r.ci = Interval{r.mean - half, r.mean + half};
  return r;
}

double paired_min_detectable_effect(double sd, size_t n, double alpha, double power) {
  if (!std::isfinite(sd) || sd < 0 || n < 2) return kNaN;
  if (!(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return kNaN;
  const double df = static_cast<double>(n - 1);
  return (student_t_quantile(1 - alpha / 2, df) + student_t_quantile(power, df)) * sd /
         std::sqrt(static_cast<double>(n));
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  const size_t k = p.size();
  std::vector<size_t> order(k);
  for (size_t i = 0; i < k; ++i) order[i] = i;
  // Ascending, NaN last; stable, so ties keep their input order (and get the same value anyway).
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (std::isnan(p[x])) return false;
    if (std::isnan(p[y])) return true;
    return p[x] < p[y];
  });
  std::vector<double> out(k, kNaN);
  double running = 0;
  for (size_t j = 0; j < k; ++j) {
    const double pj = p[order[j]];
    if (std::isnan(pj)) break;  // the rest are NaN too
    running = std::max(running, std::min(1.0, static_cast<double>(k - j) * pj));
    out[order[j]] = running;
  }
  return out;
}

}  // namespace lockstep::stats
