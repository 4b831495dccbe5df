#include "harness/dist/parallel_config.h"

namespace lockstep::dist {

using config::KeySpec;
using config::Knob;

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
          KeySpec::Float("bucket_mb", 25.0, "gradient bucket size for the all-reduce (ZeRO 0-1; buckets span the model's units, as DDP's bucket_cap_mb spans parameters)")
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

ParallelConfig ParallelConfig::from(const config::Config& c) {
  return ParallelConfig{c.integer("parallel.world_size"), c.integer("parallel.zero_stage"),
                        c.str("parallel.backend"), c.number("parallel.bucket_mb"),
                        c.number("parallel.timeout_s")};
}

}  // namespace lockstep::dist
