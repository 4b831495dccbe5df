#include "harness/vocab/run_config.h"

#include <filesystem>

namespace lockstep {
namespace {

void finalize_run(config::Config& c) {
  if (!c.is_set("run.name")) {
    std::string stem = std::filesystem::path(c.path()).stem().string();
    c.resolve("run.name", stem.empty() ? std::string("run") : stem, "run.name");
  }
  // Point at the key the user wrote (a default has no line): warmup_steps, unless only steps was
  // set.
  if (c.integer("run.warmup_steps") >= c.integer("run.steps"))
    c.fail(
        c.is_set("run.warmup_steps") || !c.is_set("run.steps") ? "run.warmup_steps" : "run.steps",
        "warmup_steps = " + std::to_string(c.integer("run.warmup_steps")) +
            " leaves no timed step (steps = " + std::to_string(c.integer("run.steps")) + ")");
}

}  // namespace

const config::SectionSchema& run_schema() {
  using config::KeySpec;
  using config::Knob;
  static const config::SectionSchema s{
      "run",
      "What to run: seed, length, device.",
      {
          KeySpec::Str("name", std::nullopt,
                       "label for reports and history (default: the file name)")
              .kind(Knob::None),
          KeySpec::Int("seed", 1234, "seed of the initialisation and the data")
              .range(0, 9007199254740991.0),
          KeySpec::Int("steps", 200, "optimizer steps (the LR schedule spans them)")
              .range(1, 100000000),
          KeySpec::Int("warmup_steps", 5, "first steps never timed")
              .range(0, 100000000)
              .kind(Knob::None),
          KeySpec::Str("device", "cpu", "cpu | cuda").one_of({"cpu", "cuda"}),
          KeySpec::Int("threads", 1, "intra-op CPU threads per rank (fixed: part of determinism)")
              .range(1, 1024)
              .kind(Knob::Exact),
          KeySpec::Bool(
              "deterministic", true,
              "deterministic kernels; turn off only for a kernel that has no deterministic version")
              .kind(Knob::Exact),
          KeySpec::Int("log_every", 20, "progress line every N steps when not on a terminal")
              .range(1, 100000000)
              .kind(Knob::None),
          KeySpec::Float("step_timeout_s", 300.0,
                         "watchdog: abort when one step takes longer (0 = off)")
              .range(0, 1e9)
              .kind(Knob::None),
          KeySpec::Float("step_timeout_factor", 0.0,
                         "watchdog: abort when a step exceeds this x the running median (0 = off)")
              .range(0, 1e9)
              .kind(Knob::None),
          KeySpec::Bool("cuda_graphs", false,
                        "CUDA only: capture forward and backward as CUDA graphs once shapes are "
                        "static, then replay them (1 rank, zero_stage 0)")
              .kind(Knob::Exact),
      },
      finalize_run,
  };
  return s;
}

RunConfig RunConfig::from(const config::Config& c) {
  RunConfig r;
  r.name = c.str("run.name");
  r.seed = c.integer("run.seed");
  r.steps = c.integer("run.steps");
  r.warmup_steps = c.integer("run.warmup_steps");
  r.device = c.str("run.device");
  r.threads = c.integer("run.threads");
  r.deterministic = c.flag("run.deterministic");
  r.log_every = c.integer("run.log_every");
  r.step_timeout_s = c.number("run.step_timeout_s");
  r.step_timeout_factor = c.number("run.step_timeout_factor");
  r.cuda_graphs = c.flag("run.cuda_graphs");
  return r;
}

}  // namespace lockstep
