#include "harness/compare/envelope_noise.h"

namespace lockstep::compare {

ArmDtype declared_dtype(const config::Config& c, const TrainerProtocol& t) {
  // The hello's name was checked where the metrics were read; a bad one reads as not said.
  if (auto h = variants::parse_compute(t.compute)) return {*h, DtypeFrom::Hello};
  // An unparsable [precision] compute is the config's error, reported when it loads.
  const auto own = variants::parse_compute(c.str("precision.compute"));
  if (own && c.is_set("precision.compute")) return {*own, DtypeFrom::Config};
  return {own.value_or(variants::Compute::FP32), DtypeFrom::Default};
}

NoiseChoice choose_envelope_noise(const gate::Policy& p, const config::Config& baseline,
                                  const config::Config& variant, const TrainerProtocol& btrainer,
                                  const TrainerProtocol& vtrainer) {
  NoiseChoice n;
  n.baseline = declared_dtype(baseline, btrainer);
  n.variant = declared_dtype(variant, vtrainer);
  if (p.envelope_noise > 0) {
    n.u = p.envelope_noise;
    n.source = "[gate] envelope_noise";
    n.dtype = NoiseDtype{"", Arm::Variant, DtypeFrom::Gate};
    return n;
  }
  const auto rb = variants::unit_roundoff(n.baseline.compute, baseline.str("run.device"));
  const auto rv = variants::unit_roundoff(n.variant.compute, variant.str("run.device"));
  const bool from_baseline = rb.u > rv.u;  // the coarser; the variant's on a tie
  const ArmDtype& d = from_baseline ? n.baseline : n.variant;
  const auto& r = from_baseline ? rb : rv;
  n.u = r.u;
  n.label = r.label;
  n.source = "unit roundoff of " + std::string(variants::name_of(d.compute)) + " (" + r.label + ")";
  n.dtype = NoiseDtype{variants::name_of(d.compute), from_baseline ? Arm::Baseline : Arm::Variant,
                       d.from};
  return n;
}

std::pair<double, std::string> envelope_noise(const gate::Policy& p, const config::Config& a,
                                              const config::Config& b) {
  const auto n = choose_envelope_noise(p, a, b, TrainerProtocol::own(), TrainerProtocol::own());
  return {n.u, n.source};
}

std::string same_dtype_warning(const gate::Policy& p, const NoiseChoice& n,
                               const std::string& variant_path, const std::string& observed) {
  if (!p.alignment || *p.alignment != "approximate" || p.envelope_noise > 0 ||
      n.variant.compute != n.baseline.compute)
    return "";
  const std::string dtype = variants::name_of(n.variant.compute);
  const char* where = n.variant.from == DtypeFrom::Hello    ? "as its trainer's hello declares"
                      : n.variant.from == DtypeFrom::Config ? "as its [precision] compute says"
                                                            : "the default: neither its trainer's "
                                                              "hello nor [precision] compute "
                                                              "declares a dtype";
  const std::string suggest = observed.empty() || observed == dtype ? "bf16" : observed;
  std::string w = "the variant declares [gate] alignment = \"approximate\" but computes in " +
                  dtype + " like the baseline (" + where + "), so the noise envelope uses " +
                  dtype + "'s unit roundoff u = " + n.label +
                  ". If the variant computes in a coarser dtype, declare it: add compute = \"" +
                  suggest + "\" under [precision] in " + variant_path +
                  " (or Session(compute=\"" + suggest + "\") in its trainer's hello)";
  if (!observed.empty() && observed != dtype)
    w += "; its trainer was seen computing in " + observed + " (observed, not declared)";
  return w;
}

}  // namespace lockstep::compare
