#include "variants/precision_traits.h"

#include <cmath>
#include <stdexcept>

namespace lockstep::variants {
namespace {

using config::Knob;

// One row per precision. fp16 has no GPU column of its own (tensor cores run it at the bf16 rate)
// and no CPU GEMM peak (LibTorch 1.13 has no fp16 CPU GEMM): its CPU MFU is unknown.
const ComputeTraits kTraits[] = {
    {Compute::FP32, "fp32", std::nullopt, false, false, Compute::FP32, Compute::FP32, Knob::Exact,
     Knob::Exact, false},
    {Compute::TF32, "tf32", std::nullopt, true, false, Compute::TF32, Compute::FP32, Knob::Exact,
     Knob::Approximate, false},  // no TF32 units on a CPU: there it computes fp32
    {Compute::BF16, "bf16", Dtype::BF16, false, false, Compute::BF16, Compute::BF16,
     Knob::Approximate, Knob::Approximate, false},
    {Compute::FP16, "fp16", Dtype::F16, false, true, Compute::BF16, std::nullopt, Knob::Approximate,
     Knob::Approximate, true},  // CUDA only (LibTorch 2.x has CPU fp16 GEMMs, 1.13 none)
};

}  // namespace

const ComputeTraits& traits(Compute c) {
  for (const auto& t : kTraits)
    if (t.id == c) return t;
  throw std::logic_error("precision without traits");
}

const std::vector<Compute>& all_computes() {
  static const std::vector<Compute> all{Compute::FP32, Compute::TF32, Compute::BF16,
                                        Compute::FP16};
  return all;
}

const char* name_of(Compute c) {
  return traits(c).name;
}

std::optional<Compute> parse_compute(const std::string& name) {
  for (const auto& t : kTraits)
    if (name == t.name) return t.id;
  return std::nullopt;
}

std::vector<Compute> calibrated_computes() {
  std::vector<Compute> out;
  for (Compute c : all_computes())
    for (const auto& t : kTraits)
      if (t.cpu_peak == c) {
        out.push_back(c);
        break;
      }
  return out;
}

std::vector<std::string> names_of(const std::vector<Compute>& cs) {
  std::vector<std::string> out;
  for (Compute c : cs) out.push_back(name_of(c));
  return out;
}

config::Knob precision_change_knob(Compute a, Compute b, const std::string& device) {
  auto knob = [&](Compute c) {
    return device == "cuda" ? traits(c).knob_cuda : traits(c).knob_cpu;
  };
  return knob(a) == Knob::Exact && knob(b) == Knob::Exact ? Knob::Exact : Knob::Approximate;
}

Roundoff unit_roundoff(Compute c, const std::string& device) {
  int bits = 24;  // significand bits, the implicit one included
  if (c == Compute::BF16) bits = 8;
  if (c == Compute::FP16 || (c == Compute::TF32 && device == "cuda")) bits = 11;
  return Roundoff{std::ldexp(1.0, -bits), "2^-" + std::to_string(bits)};
}

}  // namespace lockstep::variants
