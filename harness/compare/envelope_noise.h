// The noise envelope's u (docs/method.md "Loss alignment: the noise envelope"): [gate]
// envelope_noise when set; else the unit roundoff, on its device, of the coarser of the two arms'
// declared compute dtypes (on a tie, the variant's). Each arm's dtype is, in this order: what its
// trainer declared in its hello ("compute", docs/protocol.md), its [precision] compute, the
// default fp32. An external trainer's hello is known in time: the envelope's runs are planned
// after the full runs have run (plan.h adopt_capabilities) and read it from their summaries. What
// a trainer's helper merely observed ("observed_compute") is never used for u: it is shown, and
// named in the warning below.
#pragma once

#include <string>
#include <utility>

#include "harness/config/config.h"
#include "harness/vocab/compare_result.h"
#include "harness/vocab/gate_policy.h"
#include "harness/vocab/trainer_protocol.h"
#include "variants/precision_traits.h"

namespace lockstep::compare {

// One arm's compute dtype and where it was declared (never DtypeFrom::Gate).
struct ArmDtype {
  variants::Compute compute = variants::Compute::FP32;
  DtypeFrom from = DtypeFrom::Default;
};
ArmDtype declared_dtype(const config::Config& c, const TrainerProtocol& t);

struct NoiseChoice {
  double u = 0;
  std::string source;  // "unit roundoff of bf16 (2^-8)" | "[gate] envelope_noise"
  std::string label;   // "2^-8" ("" with [gate] envelope_noise)
  NoiseDtype dtype;    // whose dtype that is, and where it was declared
  ArmDtype baseline, variant;
};
NoiseChoice choose_envelope_noise(const gate::Policy& p, const config::Config& baseline,
                                  const config::Config& variant, const TrainerProtocol& btrainer,
                                  const TrainerProtocol& vtrainer);

// Arms that announce no dtype (Lockstep's own trainer; serve's score envelope): u and its source.
std::pair<double, std::string> envelope_noise(const gate::Policy& p, const config::Config& a,
                                              const config::Config& b);

// A variant that declares [gate] alignment = "approximate" while its compute dtype equals the
// baseline's is judged at that dtype's u, perhaps far below the rounding it really does: the
// warning names the u, where the dtype came from and the line to add ("" when it does not apply).
// `observed` is what the variant's trainer was seen computing in ("" when nothing was seen).
std::string same_dtype_warning(const gate::Policy& p, const NoiseChoice& n,
                               const std::string& variant_path, const std::string& observed);

}  // namespace lockstep::compare
