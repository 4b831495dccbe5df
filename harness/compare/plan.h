// Stage 1 of a comparison (plan -> execute -> analyse -> gate): everything decided before a run
// starts. Loads both configs (a bad one: exit 2 before any run), resolves the gate policy,
// classifies the changed keys and lists the runs, each as a job that says what to run
// (harness/runs/child_run.h knows how):
//   alignment  full-length runs at the comparison seed: the baseline (A/B mode), the variant,
//              then for approximate knobs K baseline runs with rounding-sized gradient noise
//              (the noise envelope, harness/compare/envelope.h), or, where the harness cannot
//              inject noise (golden mode, an external trainer), the baseline at K more seeds
//              (the seed band);
//   probes     with the envelope: forwards at the baseline's checkpoints (the function probe,
//              harness/compare/probe_check.h) under the baseline's numerics, the variant's and
//              the envelope's K weight noises; after the alignment runs, which write them;
//   timing     the short timing repeats, interleaved A B, B A, A B, ... so machine drift cancels;
//              a pair runs at once taking turns step by step (or one after the other: interleave
//              below), and only when the alignment runs say the loss aligns. With
//              repeats = "auto" they are planned up to max_repeats, and sequential.h runs as many
//              of them as its looks need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/compare/golden_file.h"
#include "harness/compare/request.h"
#include "harness/config/config.h"
#include "harness/runs/child_run.h"
#include "harness/vocab/compare_kinds.h"
#include "harness/vocab/compare_result.h"
#include "harness/vocab/gate_policy.h"
#include "harness/vocab/trainer_protocol.h"

namespace lockstep::compare {

// The function probe's checkpoints: every run.steps / kProbePoints steps (the last step has none).
constexpr int64_t kProbePoints = 5;

// One run of a comparison: the arm it measures, what it is for, and the job that runs it.
struct ArmRun {
  Arm arm = Arm::Baseline;
  Role role = Role::Full;
  int64_t seed = 0;  // its run.seed (the seed band's runs differ from the comparison seed)
  runs::RunJob job;
  int64_t noise_seed = 0;  // Role::Envelope: its faults.noise_seed
};

struct ComparisonPlan {
  Mode mode = Mode::AB;
  std::string out_dir;
  config::Config baseline_config, variant_config;  // effective; golden mode: both the variant's
  std::string baseline_path, variant_path;         // the config files as given
  gate::Policy policy;                             // with --check-step / --repeats applied
  std::string policy_source;
  std::vector<config::Change> changes;  // A/B mode: every changed key
  std::vector<std::string> changed_knobs;
  // How the loss is judged: Exact | Approximate | Workload | None (declared, not judged).
  config::Knob klass = config::Knob::Exact;
  std::vector<std::string> workload_changes;  // the changed keys that change the workload itself
  std::string klass_source;  // where klass came from (golden mode: harness/compare/golden_mode.h)
  std::vector<std::string> warnings;    // known before any run (too few repeats, A/A, knobs)
  std::string golden_file;              // golden mode: the `step loss` file ...
  std::vector<double> golden_curve;     // ... and its curve (index 0 = step 1)
  GoldenFile golden;                    // ... and all of it: environment, envelope (format 2)
  // Why the golden file's envelope cannot judge this variant ("" = it can, where it has one).
  std::string golden_envelope_unusable;
  std::vector<double> reference_curve;  // --against-history: the recorded baseline curve
  std::string reference_source;
  // Approximate knobs: Rule::Envelope or Rule::SeedBand (see above); unset otherwise.
  std::optional<Rule> approximate_rule;
  double envelope_noise = 0;          // the envelope runs' relative gradient noise
  std::string envelope_noise_source;  // "unit roundoff of bf16 (2^-8)" | "[gate] envelope_noise"
  NoiseDtype envelope_noise_dtype;    // whose dtype that is, and where (envelope_noise.h)
  int parallel = 1;  // alignment runs at once
  // On CUDA: CUDA_VISIBLE_DEVICES per concurrent alignment run (parallel = its size), so each
  // run's ranks get GPUs of their own. Empty on a CPU comparison.
  std::vector<std::vector<std::string>> gpu_slots;

  std::vector<ArmRun> alignment;  // "full" runs ([baseline], variant), then "envelope" or "seed band"
  // The function probe: the baseline's full run checkpoints every probe_every steps; one probe
  // run of the baseline, the variant and each noise seed. Empty (probe_note says why) unless the
  // envelope rule applies.
  int64_t probe_every = 0;
  std::string probe_note;
  double probe_noise = 0;          // the noise probes' relative weight noise
  std::string probe_noise_source;  // the envelope's, or "unit roundoff of fp32 (2^-24)"
  std::vector<ArmRun> probes;     // baseline, variant, then the noise seeds
  std::vector<ArmRun> timing;     // interleaved; empty in golden mode
  // How each pair of timing runs (timing[2i], timing[2i+1]) runs: Step (at the same time,
  // taking turns step by step: runs::run_children_in_turns; judged as matched pairs) or
  // Repeat (one after the other); interleave_note says why Repeat where it is.
  Interleave interleave = Interleave::Repeat;
  std::string interleave_note;
  // "step": rank r of both runs of every pair is pinned to turn_cpus[r] (empty: not pinned)
  std::vector<std::vector<int>> turn_cpus;
  int turn_ranks = 1;  // ranks per run: rank r of one takes turns with rank r of the other
  bool steps_in_turns() const { return interleave == Interleave::Step; }
  // Kernel conformance first (conformance_stage.h): the variant changes an implementation.
  bool conformance = false;
  // External arms: the plan after the full runs waits for what their trainers announce.
  bool awaits_capabilities = false;
  TrainerProtocol baseline_trainer = TrainerProtocol::own(), variant_trainer = TrainerProtocol::own();
};

// Throws config::ConfigError (a bad config) or UsageError (a bad golden file, a check step past
// the last step): both exit 2, before anything runs. With an external arm the plan holds only the
// full runs (awaits_capabilities): what else it can do depends on what its trainer announces.
ComparisonPlan plan_comparison(const CompareRequest& req);

// The rest of an external comparison's plan, once the full runs have said what their trainers
// support (the hello line, docs/protocol.md): envelope or seed band, probe, turns, timing.
void adopt_capabilities(ComparisonPlan& p, const CompareRequest& req, const TrainerProtocol& baseline,
                        const TrainerProtocol& variant);

// The plan after the full runs, for trainers with these capabilities (Lockstep's own: all).
void plan_checks(ComparisonPlan& p, const CompareRequest& req, const TrainerProtocol& baseline,
                 const TrainerProtocol& variant);

// Whether the variant changes an implementation: a key that selects one of a slot's kernels
// (attention.impl, model.activation, ...) or the plugin files it loads.
bool brings_kernels(const std::vector<config::Change>& changes);

// Untimed runs at once when the request leaves it open: the cores this process may use
// (util::available_cores) over the cores one run takes (threads x ranks), at least 1.
int auto_parallel(const config::Config& a, const config::Config& b);

}  // namespace lockstep::compare
