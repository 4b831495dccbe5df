#include "harness/compare/probe_check.h"

#include <cmath>
#include <stdexcept>

namespace lockstep::compare {

double sketch_distance(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("sketches of different sizes");
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

namespace {

void same_shape(const train::ProbeRecord& a, const train::ProbeRecord& b, const char* what) {
  if (a.steps != b.steps || a.tensors != b.tensors || a.buckets != b.buckets)
    throw std::invalid_argument(std::string("the ") + what +
                                " probe recorded other steps or tensors than the baseline's");
}

}  // namespace

ProbeCheck judge_probe(const train::ProbeRecord& baseline, const train::ProbeRecord& variant,
                       const std::vector<train::ProbeRecord>& noise, double factor) {
  same_shape(baseline, variant, "variant's");
  for (const auto& n : noise) same_shape(baseline, n, "noise");
  if (noise.empty()) throw std::invalid_argument("no noise probe: the envelope is unknown");
  ProbeCheck c;
  c.run = true;
  c.steps = baseline.steps;
  c.tensors = baseline.tensors;
  c.factor = factor;
  c.noise_runs = static_cast<int64_t>(noise.size());
  c.ratio_max = 0;
  for (size_t s = 0; s < baseline.steps.size(); ++s) {
    std::vector<double> d_row, e_row, r_row;
    for (size_t t = 0; t < baseline.tensors.size(); ++t) {
      const auto& ref = baseline.sketches[s][t];
      const double d = sketch_distance(variant.sketches[s][t], ref);
      double e = 0;
      for (const auto& n : noise) e = std::max(e, sketch_distance(n.sketches[s][t], ref));
      // E = 0: the noise does not reach this tensor (it sees no weight matrix, or the arms
      // compute it in fp32 alike); any difference there is outside, none is inside.
      const double r = e > 0 ? d / e : (d > 0 ? INFINITY : 0.0);
      d_row.push_back(d), e_row.push_back(e), r_row.push_back(r);
      if (r > c.ratio_max || (c.at_tensor.empty() && t == 0 && s == 0)) {
        c.ratio_max = r;
        c.at_step = baseline.steps[s];
        c.at_tensor = baseline.tensors[t];
      }
    }
    c.variant.push_back(std::move(d_row));
    c.envelope.push_back(std::move(e_row));
    c.ratio.push_back(std::move(r_row));
  }
  // Where the math first changed: the earliest tensor in forward order outside at any step.
  for (size_t t = 0; t < c.tensors.size() && c.first_outside_tensor.empty(); ++t)
    for (size_t s = 0; s < c.steps.size(); ++s)
      if (c.ratio[s][t] > factor) {
        c.first_outside_tensor = c.tensors[t];
        c.first_outside_step = c.steps[s];
        break;
      }
  c.passed = c.first_outside_tensor.empty();
  return c;
}

}  // namespace lockstep::compare
