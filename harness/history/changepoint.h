// Change-point detection for the regression report: where did a metric's level shift over the
// recorded commits, by how much, and which commit came first after it.
//
// Method (robust binary segmentation):
//  1. Work on log(x) (all values positive), so a change is a ratio whatever the level.
//  2. A segment's cost is its L1 deviation from its own median, sum |y_i - median|. The best
//     split of a segment is the one that lowers the cost most, with at least min_segment points on
//     each side. Medians and absolute deviations are what make this robust: one slow run (a busy
//     machine) moves a median by one rank, not by its size, and can never form a segment alone.
//  3. The split is significant when a permutation test says so: the best split's cost reduction is
//     compared with the best reduction over `permutations` seeded shuffles of the same segment
//     (under "no change" every order is equally likely), p = (1 + #{shuffled >= observed}) /
//     (1 + permutations) <= alpha. No noise model, no normality; exact for exchangeable noise.
//  4. Significant splits are searched again on both sides (binary segmentation) until none is.
//  5. Each change is measured between its neighbouring segments: size = percent change of the
//     median, with a bootstrap CI of that (stats::bootstrap_ci, stats::pct_change). A change is
//     reported only when the CI excludes 0 and |size| >= min_change_pct; otherwise it is merged
//     away (the weakest first) and its neighbours are measured again.
// A change needs min_segment points after it before it can be confirmed: a single slow point at
// the newest commit is an outlier until more points agree.
//
// Loss drift is a different question: the final loss of one config (same hash, so the same seed)
// on one machine is deterministic, so any change between consecutive points is a numerics change,
// found exactly, with no statistics (detect_loss_drift).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::history {

enum class Better { Higher, Lower };  // tokens/s and MFU: higher; P99 and loss: lower

struct ChangePointOptions {
  double alpha = 0.01;  // permutation test level per split
  int permutations = 999;
  size_t min_segment = 3;                 // points on each side of a change
  double min_change_pct = 2.0;            // smaller (median) shifts are not reported
  int bootstrap = 2000;                   // resamples for the CI of the size
  double level = 0.95;                    // of that CI
  uint64_t seed = 0x4c6f636b73746570ull;  // the permutations' and bootstrap's seed (deterministic)
};

struct ChangePoint {
  size_t index = 0;              // the first point after the change
  std::string commit;            // that point's commit
  std::string previous_commit;   // the last point's commit before it
  double before = 0, after = 0;  // medians of the neighbouring segments
  double size_pct = 0;           // 100 * (after / before - 1)
  double ci_lo = 0, ci_hi = 0;   // bootstrap CI of size_pct
  double p_value = 1;            // permutation p of the split that found it
  bool regression = false;       // worse in the metric's direction
  const char* direction() const { return regression ? "regression" : "improvement"; }
};

// x: finite values in time order; commits: one per value. Throws std::invalid_argument when the
// sizes differ or a value is not finite.
std::vector<ChangePoint> detect_changes(const std::vector<double>& x,
                                        const std::vector<std::string>& commits, Better better,
                                        const ChangePointOptions& opt = {});

struct LossDrift {
  size_t index = 0;  // the point whose loss differs from the previous one
  std::string commit, previous_commit;
  double before = 0, after = 0;  // the two final losses
  double delta = 0;              // after - before
  bool worse = false;            // the loss went up
  bool same_commit = false;      // both points ran the same commit: the run is not deterministic
};

// Consecutive points with the same config hash whose final losses differ by more than tolerance
// (0: any bitwise difference). A change of config hash starts a new reference without a flag.
std::vector<LossDrift> detect_loss_drift(const std::vector<double>& loss,
                                         const std::vector<std::string>& commits,
                                         const std::vector<std::string>& config_hashes,
                                         double tolerance = 0);

}  // namespace lockstep::history
