// Statistics behind the A/B verdicts ("faster / slower / no significant change"): descriptive
// statistics, bootstrap confidence intervals, the Mann-Whitney U test and a rolling robust z-score.
// Free functions over std::vector<double>; edge cases are part of each contract. Deterministic:
// no std::*_distribution, so results are identical across standard libraries.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace lockstep::stats {

// Arithmetic mean. NaN if empty.
double mean(const std::vector<double>& x);

// Median (mean of the two middle values for even n). NaN if empty or if any value is NaN.
double median(std::vector<double> x);

// Sample standard deviation (divisor n-1, two-pass). NaN if n < 2.
double stddev(const std::vector<double>& x);

// The q-th percentile, q in [0,100], by linear interpolation between order statistics (numpy's
// default, Hyndman-Fan type 7; same arithmetic as numpy). NaN if empty or if any value is NaN;
// n=1 -> that value. q outside [0,100] (or NaN) -> std::invalid_argument.
double percentile(std::vector<double> x, double q);

// Raw median absolute deviation, median(|x - median(x)|), unscaled (multiply by 1.4826 for a
// normal-consistent sigma). NaN if empty; 0 for n=1 or all-equal values.
double mad(const std::vector<double>& x);

// True if no value is NaN or +/-inf (true for an empty vector).
bool all_finite(const std::vector<double>& x);

// splitmix64 (Steele, Lea, Flood 2014): the bootstrap's RNG, the same on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  size_t index(size_t n) { return static_cast<size_t>(next() % n); }  // in [0, n); n > 0

 private:
  uint64_t state_;
};

// A confidence interval; valid() iff both ends are finite and lo <= hi.
struct Interval {
  double lo = NAN, hi = NAN;
  bool valid() const;
};

// A statistic comparing sample a (baseline) with sample b (variant).
using TwoSampleStat = std::function<double(const std::vector<double>&, const std::vector<double>&)>;

// Deterministic (seeded) percentile bootstrap of a two-sample statistic: resample a and b
// independently with replacement `resamples` times (a's draws, then b's, per resample), evaluate
// stat once on each pair, and return the type-7 percentiles (1-level)/2 and (1+level)/2 of the
// finite results. Invalid Interval if either sample is empty or stat is non-finite on more than
// half of the resamples. resamples < 1 or level outside (0,1) -> std::invalid_argument.
// With n=1 per sample every resample is the same, so the interval collapses to a point.
Interval bootstrap_ci(const std::vector<double>& a, const std::vector<double>& b,
                      const TwoSampleStat& stat, int resamples, double level, uint64_t seed);

// Hierarchical (cluster) bootstrap for pooled data: a and b are groups (e.g. repeats of a
// benchmark, each a vector of per-step latencies). Each resample draws a.size() groups of a and
// b.size() groups of b with replacement, pools them, and evaluates stat on the pooled vectors. Use
// for tail quantiles such as P99, where steps within a repeat are correlated. Same contract as
// bootstrap_ci; "empty" means no groups or no values in any group. With one group per side the
// interval collapses to stat on the pooled data.
Interval bootstrap_ci_grouped(const std::vector<std::vector<double>>& a,
                              const std::vector<std::vector<double>>& b, const TwoSampleStat& stat,
                              int resamples, double level, uint64_t seed);

// Percent change of b relative to a for a statistic f: 100*(f(b)/f(a)-1). Non-finite (and so
// discarded by the bootstraps) when f(a) is 0 or either f is non-finite.
TwoSampleStat pct_change(std::function<double(const std::vector<double>&)> f);

struct MannWhitney {
  double u = NAN;
  double p_two_sided = NAN;
  bool exact = false;
};

// Largest per-sample size for which the exact Mann-Whitney p-value is computed.
constexpr size_t kMannWhitneyExactMaxN = 20;

// Mann-Whitney U test, two-sided. U is the statistic for sample a: the number of pairs (x in a,
// y in b) with x > y, ties counting 1/2; swapping a and b gives n_a*n_b - U and the same p.
// Exact p (permutation distribution by dynamic programming; p = min(1, 2*min(P(U'<=U), P(U'>=U))))
// when the pooled sample has no ties at all and n_a, n_b <= kMannWhitneyExactMaxN. Otherwise the
// normal approximation with tie correction and continuity correction (as scipy's
// method="asymptotic"); p = 1 when every value is equal. Empty input or any NaN -> NaN u and p.
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The standard normal quantile function Phi^-1(p) (Acklam's rational approximation, refined by one
// Halley step on std::erfc: |error| < 1e-12). p = 0 -> -inf, p = 1 -> +inf; p outside [0,1] or NaN
// -> NaN. normal_quantile(0.975) = 1.959964..., normal_quantile(0.8) = 0.841621...
double normal_quantile(double p);

// Relative noise of two samples of per-repeat values (one value per repeat, e.g. tokens/s): each
// arm's sample standard deviation as a percent of its own mean, pooled over the arms by degrees of
// freedom, 100*sqrt(((na-1)*cv_a^2 + (nb-1)*cv_b^2) / (na+nb-2)). Each arm is scaled by its own
// mean, so a real difference between the arms does not count as noise. NaN if either sample has
// fewer than 2 values, any value is NaN or infinite, or a mean is 0. 0 for constant samples.
double pooled_cv_pct(const std::vector<double>& a, const std::vector<double>& b);

// Minimum detectable effect of a two-sided two-sample comparison of means (normal approximation):
// (z_{1-alpha/2} + z_{power}) * sigma * sqrt(1/na + 1/nb), in sigma's unit (sigma = noise per
// repeat; with pooled_cv_pct, percent of the mean). Equal arms of n: the familiar
// factor * sigma * sqrt(2/n), factor 2.80 at alpha 0.05 and power 0.8. NaN if sigma is NaN,
// infinite or negative, na or nb < 2, alpha or power outside (0,1). sigma 0 -> 0.
double min_detectable_effect(double sigma, size_t na, size_t nb, double alpha, double power);

// Student's t distribution with df > 0 degrees of freedom: P(T <= t), from the regularized
// incomplete beta function (continued fraction, Lentz; |error| < 1e-12). t = +/-inf -> 1 / 0.
// NaN if t or df is NaN or df <= 0.
double student_t_cdf(double t, double df);

// Its quantile: the t with student_t_cdf(t, df) = p (bisection on the CDF to 1e-12 relative).
// p = 0 -> -inf, p = 1 -> +inf; p outside [0,1], NaN, or df <= 0 -> NaN.
// student_t_quantile(0.975, 4) = 2.776445..., (0.975, 9) = 2.262157...
double student_t_quantile(double p, double df);

// The paired comparison of n matched pairs by their differences d (e.g. the log of each pair's
// variant/baseline ratio): the one-sample t-test of mean(d) = 0 and the t confidence interval
// of the mean at `level`. NaN fields (and an invalid interval) if n < 2 or any d is NaN or
// infinite; every d equal: sd 0, the interval that point, p 1 when the mean is 0 and 0 otherwise.
struct PairedT {
  size_t n = 0;
  double mean = NAN, sd = NAN;  // of d (sd: divisor n-1)
  double p_two_sided = NAN;
  Interval ci;                  // of the mean of d
};
PairedT paired_t(const std::vector<double>& d, double level);

// Minimum detectable mean difference of the paired t-test above at n pairs with noise sd per
// pair: (t_{1-alpha/2, n-1} + t_{power, n-1}) * sd / sqrt(n), in sd's unit. NaN if sd is NaN,
// infinite or negative, n < 2, alpha or power outside (0,1). sd 0 -> 0.
double paired_min_detectable_effect(double sd, size_t n, double alpha, double power);

// Holm's (1979) step-down adjusted p-values, in the input's order: with the k p-values sorted
// ascending p(1) <= ... <= p(k), adjusted p(i) = max over j <= i of min(1, (k-j+1) * p(j)).
// Rejecting where adjusted p < alpha keeps the family-wise error rate at alpha under any
// dependence. Tied p-values get the same adjusted value. A NaN p-value stays NaN and still counts
// in k (a test of the family whose p is unknown is not dropped from it: conservative); it sorts
// last, so it changes no other value's order. Empty -> empty; k = 1 -> the p-value (capped at 1).
std::vector<double> holm_adjust(const std::vector<double>& p);

// Robust z-score of each point against the preceding `window` points: (x[i] - median) /
// (1.4826 * MAD). Non-finite predecessors are left out; NaN while fewer than 3 finite
// predecessors remain (so always NaN for window < 3) and for a NaN point. When MAD is 0: 0 if the
// point equals the median, +/-inf if it differs. Used to detect loss spikes.
std::vector<double> rolling_robust_z(const std::vector<double>& x, size_t window);

}  // namespace lockstep::stats
