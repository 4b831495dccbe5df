#include "harness/vocab/checkpoint_config.h"

namespace lockstep::train {

using config::KeySpec;
using config::Knob;

const config::SectionSchema& checkpoint_schema() {
  static const config::SectionSchema s{
      "checkpoint",
      "Checkpoints for resume: model, optimizer (sharded per rank), RNG and data cursor.",
      {
          KeySpec::Int("every", 0, "steps between checkpoints (0 = off)")
              .range(0, 1e12)
              .kind(Knob::None),
          KeySpec::Int("keep", 1, "completed checkpoints kept").range(1, 1000).kind(Knob::None),
      },
      nullptr,
  };
  return s;
}

CheckpointConfig CheckpointConfig::from(const config::Config& c) {
  return CheckpointConfig{c.integer("checkpoint.every"), c.integer("checkpoint.keep")};
}

}  // namespace lockstep::train
