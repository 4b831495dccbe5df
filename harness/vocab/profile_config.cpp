#include "harness/vocab/profile_config.h"

#include <algorithm>
#include <string>

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
          KeySpec::Bool("nvtx", false,
                        "CUDA only: NVTX ranges (step, phases, layers, collectives) for Nsight "
                        "Systems")
              .kind(Knob::None),
          KeySpec::Bool("host_work", true,
                        "count the window's host work per step (operators by name and phase, "
                        "allocations, host syncs, weight casts) into host_work.json")
              .kind(Knob::None),
      },
      // Warmup and profiled steps are never timed: a window that covers every step after the
      // warmup would leave a run with no timing at all (null tokens/s), so say so up front.
      [](config::Config& c) {
        const int64_t steps = c.integer("run.steps"), warm = c.integer("run.warmup_steps");
        const ProfileConfig p = ProfileConfig::from(c);
        if (p.window == 0 || warm >= steps) return;  // run.warmup_steps has its own check
        const int64_t start = p.first_step(warm);
        const int64_t lo = std::max(start, warm + 1), hi = std::min(start + p.window - 1, steps);
        const int64_t profiled = std::max<int64_t>(0, hi - lo + 1);
        if (steps - warm - profiled >= 1) return;
        c.fail(
            c.is_set("profile.window") || !c.is_set("run.steps") ? "profile.window" : "run.steps",
            "warmup_steps = " + std::to_string(warm) + " and " + std::to_string(profiled) +
                " profiled steps leave no timed step (steps = " + std::to_string(steps) +
                "); raise steps, or set profile.window = 0");
      },
  };
  return s;
}

ProfileConfig ProfileConfig::from(const config::Config& c) {
  return ProfileConfig{c.integer("profile.window"), c.integer("profile.start"),
                       c.flag("profile.trace"), c.flag("profile.nvtx"),
                       c.flag("profile.host_work")};
}

}  // namespace lockstep::train
