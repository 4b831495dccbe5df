// The function probe's rule (issue 16): the variant's forward at the baseline's own weights,
// against the same forward under rounding-sized weight noise. Pure functions over probe records
// (harness/vocab/probe_file.h); the runs that write them are planned in plan.cpp.
//
// For every checkpoint step s and recorded tensor t (each kernel call's output, and the logits):
//   d(s, t) = ||S_variant(s, t) - S_baseline(s, t)||       the variant's distance (sketched)
//   E(s, t) = max_k ||S_noise_k(s, t) - S_baseline(s, t)|| the envelope of the K noise probes
//   ratio   = d / E
// The probe passes when every ratio is within the factor c ([gate] probe_factor). No training
// runs between the two forwards, so nothing amplifies either difference: a bug that changes what
// a kernel computes shows at that kernel's output in proportion to its size, where a loss curve
// loses it in the chaos of training (bench/RESULTS.md). The first tensor in forward order that is
// outside names where the math changed.
#pragma once

#include <string>
#include <vector>

#include "harness/vocab/compare_result.h"
#include "harness/vocab/probe_file.h"

namespace lockstep::compare {

// Throws std::invalid_argument when the records do not share steps, tensors and buckets.
ProbeCheck judge_probe(const train::ProbeRecord& baseline, const train::ProbeRecord& variant,
                       const std::vector<train::ProbeRecord>& noise, double factor);

// ||a - b||, Euclidean.
double sketch_distance(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace lockstep::compare
