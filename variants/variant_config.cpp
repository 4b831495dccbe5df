#include "variants/variant_config.h"

#include "harness/registry/catalog.h"

namespace lockstep::variants {

using config::KeySpec;
using config::Knob;

namespace {

// attention.impl selects a registry entry; a change of it is judged by the classes the entries
// declare (registry::impl_key), and then under the configs' precisions (attention_change_knob).
KeySpec attention_impl_key() {
  KeySpec k = registry::impl_key(registry::Slot::Attention, "impl", "math",
                                 "math: softmax(QK^T/sqrt(d))V | fused: LibTorch "
                                 "scaled-dot-product attention | a plugin's (`lockstep variants`)");
  auto declared = k.knob_of;
  return std::move(k).judged_by([declared](const config::Config& a, const config::Config& b) {
    auto compute = [](const config::Config& c) {
      return parse_compute(c.str("precision.compute")).value_or(Compute::FP32);
    };
    return attention_change_knob(declared(a, b), compute(a), compute(b));
  });
}

}  // namespace

const config::SectionSchema& precision_schema() {
  static const config::SectionSchema s{
      "precision",
      "Compute precision (variants/precision.h). Master weights, optimizer state and loss stay "
      "fp32.",
      {
          KeySpec::Str(
              "compute", "fp32",
              "fp32 | tf32 (CUDA matmul flag) | bf16 autocast | fp16 autocast + loss scaling")
              .one_of(names_of(all_computes()))
              .kind(Knob::Approximate)
              // tf32 is a no-op on CPU (exact); bf16/fp16 change rounding (approximate: judged
              // by the noise envelope and the function probe). The device is the variant's.
              .judged_by([](const config::Config& a, const config::Config& b) {
                return precision_change_knob(*parse_compute(a.str("precision.compute")),
                                             *parse_compute(b.str("precision.compute")),
                                             b.str("run.device"));
              }),
          KeySpec::Float("loss_scale", 65536.0, "fp16: initial dynamic loss scale")
              .range(1, 1e30)
              .kind(Knob::None),
          KeySpec::Int("growth_interval", 2000,
                       "fp16: overflow-free steps before the scale doubles")
              .range(1, 100000000)
              .kind(Knob::None),
      },
      nullptr,
  };
  return s;
}

const config::SectionSchema& attention_schema() {
  static const config::SectionSchema s{
      "attention",
      "Attention kernel (variants/attention.h).",
      {
          attention_impl_key(),
      },
      nullptr,
  };
  return s;
}

PrecisionConfig PrecisionConfig::from(const config::Config& c) {
  return PrecisionConfig{*parse_compute(c.str("precision.compute")), c.number("precision.loss_scale"),
                         c.integer("precision.growth_interval")};
}

config::Knob attention_change_knob(Knob declared, Compute a, Compute b) {
  if (declared != Knob::Exact) return declared;
  return traits(a).autocast || traits(b).autocast ? Knob::Approximate : Knob::Exact;
}

}  // namespace lockstep::variants
