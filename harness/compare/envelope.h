// The numerical-noise envelope and the whole-curve rule: how an approximate variant's loss is
// judged (issue 16), as pure functions over loss curves.
//
// Why an envelope and not a seed band: other seeds change the initialisation and the data, so
// their spread is training's run-to-run variance (8.5% of the loss in the demo), which no numerics
// bug of interest exceeds. The envelope measures what rounding of the variant's size does at the
// *same* seed: K runs of the baseline that differ from it only in rounding-sized noise on the
// weights each step computes with (every parameter x (1 + e), e ~ U(-u, u), u the unit roundoff
// of the variant's compute dtype, drawn afresh each step, each run its own noise seed; the update
// applies to the unperturbed weights: [faults] weight_rounding_noise / noise_seed). That is what
// autocast does to the weights (it computes with a rounded copy of the fp32 master weights);
// its rounding of activations is not reproduced, and the factor c covers it (docs/method.md).
// Training amplifies that noise as it amplifies the variant's own rounding, so E(step) is how far
// the same math drifts at this precision, step by step.
//
//   raw(s)  = max_k |loss_k(s) - loss_baseline(s)|           the K perturbed runs
//   E(s)    = max of raw over the trailing window of `window` steps (default 5% of the run):
//             K = 3 curves cross each other, so raw alone can touch 0 at a step by chance
//   check   |delta(check_step)| <= c E(check_step)
//   curve   mean |delta| over the last 20% of steps <= c mean E over the same steps: a bias that
//           builds up fails even when the check step happens to agree
//
// Exact knobs keep the absolute tolerance at the check step, and the curve rule is the same
// window's mean |delta| < tolerance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::compare {

// The trailing-window running maximum of max_k |runs[k](s) - reference(s)| over the steps all
// curves have (index 0 = step 1). NaN from the first step where any curve is not finite on.
std::vector<double> noise_envelope(const std::vector<double>& reference,
                                   const std::vector<std::vector<double>>& runs, int64_t window);

// The envelope's default trailing window: 5% of the steps, at least 1.
int64_t envelope_window(int64_t steps);

// The curve rule's window: the last `pct` percent of `steps` steps, at least one step. Returns the
// first step (1-based) of the window; the window ends at `steps`.
int64_t curve_window_start(int64_t steps, double pct);

// Mean of |a(s) - b(s)| over steps [from, to] (1-based, inclusive); NaN when any is not finite
// or the range is empty.
double mean_abs_diff(const std::vector<double>& a, const std::vector<double>& b, int64_t from,
                     int64_t to);
// Mean of x over steps [from, to]; NaN when any is not finite or the range is empty.
double mean_over(const std::vector<double>& x, int64_t from, int64_t to);

}  // namespace lockstep::compare
