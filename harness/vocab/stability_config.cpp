#include "harness/vocab/stability_config.h"

namespace lockstep::train {

const config::SectionSchema& stability_schema() {
  using config::KeySpec;
  using config::Knob;
  static const config::SectionSchema s{
      "stability",
      "Loss-spike mitigations (A/B them like any variant). Gradient clipping is "
      "optim.clip_grad_norm.",
      {
          // Exact: a clean run never trips it, so the loss must still match the baseline.
          KeySpec::Float("skip_outlier_z", 0.0,
                         "skip the update when the loss or grad norm is this many robust z above "
                         "the recent window (0 = off)")
              .range(0, 1e6)
              .kind(Knob::Exact),
          KeySpec::Int("outlier_window", 50, "steps in the window for skip_outlier_z")
              .range(5, 100000)
              .kind(Knob::Exact),
          KeySpec::Float("z_loss", 0.0,
                         "z-loss coefficient: adds z_loss * mean(logsumexp(logits)^2) to the "
                         "training loss (0 = off)")
              .range(0, 1)
              .kind(Knob::Approximate),
      },
      nullptr,
  };
  return s;
}

StabilityConfig StabilityConfig::from(const config::Config& c) {
  return StabilityConfig{c.number("stability.skip_outlier_z"),
                         c.integer("stability.outlier_window"), c.number("stability.z_loss")};
}

}  // namespace lockstep::train
