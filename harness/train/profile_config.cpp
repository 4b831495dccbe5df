#include "harness/train/profile_config.h"

namespace lockstep::train {

const config::SectionSchema& profile_schema() {
  using config::KeySpec;
  using config::Knob;
  static const config::SectionSchema s{
      "profile",
      "Operator and per-layer profiling window; Chrome trace export.",
      {
          KeySpec::Int("window", 5,
                       "steps profiled (operators via RecordFunction, per-layer costs); 0 = off")
              .range(0, 1e9)
              .kind(Knob::None),
          KeySpec::Int("start", 0, "first profiled step (0 = right after run.warmup_steps)")
              .range(0, 1e12)
              .kind(Knob::None),
          KeySpec::Bool("trace", true, "write trace.rank<r>.json (Chrome trace-event format)")
              .kind(Knob::None),
      },
      nullptr,
  };
  return s;
}

ProfileConfig ProfileConfig::from(const config::Config& c) {
  return ProfileConfig{c.integer("profile.window"), c.integer("profile.start"),
                       c.flag("profile.trace")};
}

}  // namespace lockstep::train
