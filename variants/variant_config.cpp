#include "variants/variant_config.h"

namespace lockstep::variants {

using config::KeySpec;
using config::Knob;

const config::SectionSchema& precision_schema() {
  static const config::SectionSchema s{
      "precision",
      "Compute precision (variants/precision.h). Master weights, optimizer state and loss stay "
      "fp32.",
      {
          KeySpec::Str(
              "compute", "fp32",
              "fp32 | tf32 (CUDA matmul flag) | bf16 autocast | fp16 autocast + loss scaling")
              .one_of({"fp32", "tf32", "bf16", "fp16"})
              .kind(Knob::Approximate),
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
          KeySpec::Str(
              "impl", "math",
              "math: softmax(QK^T/sqrt(d))V | fused: LibTorch scaled-dot-product attention")
              .one_of({"math", "fused"})
              .kind(Knob::Exact),
      },
      nullptr,
  };
  return s;
}

PrecisionConfig PrecisionConfig::from(const config::Config& c) {
  return PrecisionConfig{c.str("precision.compute"), c.number("precision.loss_scale"),
                         c.integer("precision.growth_interval")};
}
AttentionConfig AttentionConfig::from(const config::Config& c) {
  return AttentionConfig{c.str("attention.impl")};
}

config::Knob precision_knob(const std::string& from, const std::string& to,
                            const std::string& device) {
  auto rounding = [&](const std::string& p) {
    if (p == "tf32")
      return device == "cuda" ? 1 : 0;  // no tensor cores on CPU: the flag is a no-op
    return p == "fp32" ? 0 : 1;
  };
  if (rounding(from) == 0 && rounding(to) == 0) return Knob::Exact;
  return Knob::Approximate;
}

config::Knob attention_knob(const std::string& compute) {
  return compute == "bf16" || compute == "fp16" ? Knob::Approximate : Knob::Exact;
}

}  // namespace lockstep::variants
