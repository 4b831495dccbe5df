// Amdahl's law fitted to measured speed-ups (torch-free, Eigen least squares).
//
// Model. With a fraction P of the single-rank step parallelisable over N ranks, the step time is
// T(N) = T1 * ((1 - P) + P / N), and the speed-up over one rank is S(N) = 1 / ((1 - P) + P / N).
//
// Linearisation. Measured speed-ups are relative to a reference size N_ref (the smallest N
// measured, not necessarily 1): s(N) = T(N_ref) / T(N). Its reciprocal, the normalised step time,
// is linear in x = 1/N:
//     1 / s(N) = T(N) / T(N_ref) = a + b * x,   a = (1 - P) * T1 / T(N_ref),  b = P * T1 / T(N_ref)
// so an ordinary least-squares fit of y = 1/s on [1, 1/N] (Eigen, column-pivoting Householder QR)
// gives a and b, and P = b / (a + b) (a + b is the fitted single-rank time, normalised). The fit
// does not force the curve through the reference point, so noise on that point is not amplified.
// Two distinct sizes determine the line exactly (no goodness of fit); three or more give R^2 (on
// 1/s) and the residuals of the fitted speed-ups.
//
// Clamping. A fitted P above 1 means superlinear speed-up (caches, per-rank micro-batches that fit
// better, or shared-core artefacts): P is clamped to 1 and the fit flagged. Below 0 means more
// ranks were slower: clamped to 0 and flagged. Predictions use the clamped P.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace lockstep::scale {

// One measured point: n ranks, speed-up relative to the reference size (the smallest n).
struct SpeedupPoint {
  double n = 0;
  double speedup = NAN;
};

struct AmdahlFit {
  bool ok = false;           // a fit exists (>= 2 distinct sizes with a finite, positive speed-up)
  double p = NAN;            // the parallel fraction, clamped to [0, 1]
  double p_raw = NAN;        // as fitted, before clamping
  bool clamped = false;      // p != p_raw
  bool superlinear = false;  // p_raw > 1: faster than linear somewhere
  bool slowdown = false;     // p_raw < 0: more ranks were slower
  bool poor = false;         // R^2 < kPoorR2 or a fitted speed-up off by more than kPoorResidual
  double a = NAN, b = NAN;   // 1/s(N) = a + b/N (normalised step time)
  double r2 = NAN;  // coefficient of determination of the linear fit on 1/s; NaN for 2 sizes
  double max_rel_residual =
      NAN;           // max |s_fit(N) - s(N)| / s(N) over the points, with the clamped P
  double ref_n = 1;  // the reference size of the speed-ups
  int points = 0;    // points used
  int sizes = 0;     // distinct n among them
  std::vector<std::string> notes;  // why there is no fit, why it is poor, what was clamped

  // Predicted speed-up at n ranks relative to ref_n (what the measured speed-ups are relative to).
  // NaN without a fit.
  double predict(double n) const;
  // Predicted speed-up at n ranks over one rank: 1 / ((1-P) + P/n). NaN without a fit.
  double predict_vs_one(double n) const;
  // The ceiling 1/(1-P) over one rank (infinity for P = 1). NaN without a fit.
  double max_speedup() const;
};

constexpr double kPoorR2 = 0.9;
constexpr double kPoorResidual = 0.10;

// Amdahl's speed-up over one rank.
double amdahl_speedup(double p, double n);

// Least-squares fit of P (see the header comment). Points with a non-finite or non-positive
// speed-up, or n < 1, are left out (and say so in notes). ref_n is the smallest n used.
AmdahlFit fit_amdahl(const std::vector<SpeedupPoint>& points);

}  // namespace lockstep::scale
