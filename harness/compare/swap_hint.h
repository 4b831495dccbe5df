// A comparison whose arms look swapped: `lockstep compare BASELINE VARIANT` takes the baseline
// first, and a user who typed them the other way round gets a correct but puzzling FAIL (the
// optimization, run as the baseline, makes the real baseline look like a large slowdown).
#pragma once

#include <string>

#include "harness/vocab/compare_result.h"

namespace lockstep::compare {

// The share of tokens/s the variant must lose (significantly) before the hint is given.
constexpr double kSwapHintSlowdownPct = 15.0;

// True when a config is named like a baseline: its file name or run.name contains "baseline".
bool named_like_baseline(const ArmResult& arm);

// "did you swap them?" when the variant is named like a baseline, the baseline is not, and the
// variant is significantly slower by at least kSwapHintSlowdownPct; "" otherwise.
std::string swapped_arms_hint(const CompareResult& r);

}  // namespace lockstep::compare
