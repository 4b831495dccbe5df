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

const config::SectionSchema& parallel_schema() {
  static const config::SectionSchema s{
      "parallel",
      "Ranks and ZeRO-style sharding (variants/sharding.h), over c10d.",
      {
          KeySpec::Int("world_size", 1, "ranks (processes); the launcher spawns them on loopback")
              .range(1, 4096),
          KeySpec::Int("zero_stage", 0,
                       "0 data parallel | 1 optimizer state | 2 + gradients | 3 + parameters")
              .range(0, 3)
              .kind(Knob::Exact),
          KeySpec::Str("backend", "auto", "auto (gloo on CPU, nccl on CUDA) | gloo | nccl")
              .one_of({"auto", "gloo", "nccl"})
              .kind(Knob::Exact),
          KeySpec::Float("bucket_mb", 25.0, "gradient bucket size for the all-reduce")
              .range(0.001, 1e6)
              .kind(Knob::Exact),
          KeySpec::Float("timeout_s", 60.0,
                         "collective timeout: a lost rank fails the others after this")
              .range(1, 1e6)
              .kind(Knob::None),
      },
      [](config::Config& c) {
        if (c.str("parallel.backend") == "nccl" && c.str("run.device") != "cuda")
          c.fail("parallel.backend", "nccl needs run.device = \"cuda\"");
      },
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
ParallelConfig ParallelConfig::from(const config::Config& c) {
  return ParallelConfig{c.integer("parallel.world_size"), c.integer("parallel.zero_stage"),
                        c.str("parallel.backend"), c.number("parallel.bucket_mb"),
                        c.number("parallel.timeout_s")};
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
