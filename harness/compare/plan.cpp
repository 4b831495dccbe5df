#include "harness/compare/plan.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/envelope_noise.h"
#include "harness/compare/golden_mode.h"
#include "harness/external/external_config.h"
#include "harness/registry/catalog.h"
#include "harness/util/exit_codes.h"
#include "harness/util/process.h"
#include "harness/vocab/trainer_protocol.h"
#include "variants/precision_traits.h"

namespace lockstep::compare {
namespace fs = std::filesystem;

bool brings_kernels(const std::vector<config::Change>& changes) {
  for (const auto& c : changes) {
    if (c.key == "plugins.load") return true;
    for (auto slot : registry::all_slots())
      if (c.key == registry::selecting_key(slot)) return true;
  }
  return false;
}

int auto_parallel(const config::Config& a, const config::Config& b) {
  const long cores = util::available_cores();
  int64_t per_run = 1;
  for (const auto* c : {&a, &b})
    per_run = std::max(per_run, c->integer("run.threads") * c->integer("parallel.world_size"));
  return static_cast<int>(std::max<int64_t>(1, cores / per_run));
}

namespace {

// A golden curve is judged at its last step against the same step of a run whose LR schedule spans
// run.steps: a golden file from a run of another length is another schedule, not a reference.
void check_golden_length(const std::string& file, const std::vector<double>& golden,
                         const config::Config& variant, bool steps_flag) {
  const int64_t steps = variant.integer("run.steps");
  const int64_t last = static_cast<int64_t>(golden.size());
  if (last == steps) return;
  throw UsageError(file + ": the golden curve ends at step " + std::to_string(last) +
                   " but the variant runs " + std::to_string(steps) + " steps (" +
                   (steps_flag ? "--steps" : "run.steps") + "); a different length is a different " +
                   "LR schedule: give --steps " + std::to_string(last) +
                   " or a golden file of the same length");
}

// The baseline's overrides plus rounding-sized weight noise u under noise seed k: one envelope
// run's, and one noise probe's.
std::vector<std::string> with_noise(std::vector<std::string> sets, double u, int64_t k) {
  char noise[40];
  std::snprintf(noise, sizeof noise, "%.17g", u);
  sets.push_back(std::string("faults.weight_rounding_noise=") + noise);
  sets.push_back("faults.noise_seed=" + std::to_string(k));
  return sets;
}

ArmRun arm_run(Arm arm, Role role, int64_t run_seed, const std::string& label, const ArmSpec& spec,
               std::vector<std::string> sets, fs::path dir, int64_t stop_after) {
  runs::RunJob j;
  j.label = label;
  j.config = spec.config;
  j.sets = std::move(sets);
  j.dir = std::move(dir);
  j.stop_after = stop_after;
  return ArmRun{arm, role, run_seed, std::move(j)};
}

// Each arm's --set overrides, with --steps.
std::pair<std::vector<std::string>, std::vector<std::string>> arm_sets(const CompareRequest& req) {
  auto with_steps = [&](std::vector<std::string> sets) {
    if (req.steps > 0) sets.push_back("run.steps=" + std::to_string(req.steps));
    return sets;
  };
  return {with_steps(req.baseline.sets), with_steps(req.variant.sets)};
}

// The baseline's full run checkpoints at 1/5, 2/5, ... of its steps, for the function probe.
void add_probe_checkpoints(ComparisonPlan& p) {
  p.probe_every = std::max<int64_t>(1, p.baseline_config.integer("run.steps") / kProbePoints);
  auto& full = p.alignment.front().job;  // the baseline's full run
  full.sets.push_back("checkpoint.every=" + std::to_string(p.probe_every));
  full.sets.push_back("checkpoint.keep=" + std::to_string(kProbePoints));
}

bool one_rank(const config::Config& c) {
  return c.integer("parallel.world_size") == 1 && c.integer("parallel.zero_stage") == 0;
}

}  // namespace

// On CUDA the loss-check runs are sized by GPUs, not cores: each concurrent run gets GPUs of its
// own (CUDA_VISIBLE_DEVICES per slot; its ranks then pick device = local rank), never GPU 0 for
// all. No GPU visible from here: one run at a time. Empty on a CPU comparison.
static std::vector<std::vector<std::string>> cuda_slots(const config::Config& a,
                                                        const config::Config& b, int requested) {
  if (a.str("run.device") != "cuda" && b.str("run.device") != "cuda") return {};
  const int per_run = static_cast<int>(
      std::max(a.integer("parallel.world_size"), b.integer("parallel.world_size")));
  auto slots = util::gpu_slots(util::visible_gpus(), per_run);
  if (slots.empty()) slots.push_back({});  // the runs find (or miss) their GPUs themselves
  if (requested > 0 && static_cast<size_t>(requested) < slots.size()) slots.resize(requested);
  return slots;
}

namespace {

// The gate policy the variant resolves to, with the request's --check-step and --repeats.
void plan_policy(ComparisonPlan& p, const CompareRequest& req) {
  auto resolved = gate::resolve_policy(req.policy_file, p.variant_config, req.variant.config);
  p.policy = resolved.policy;
  p.policy_source = resolved.source;
  if (req.check_step >= 0) p.policy.check_step = req.check_step;
  if (req.repeats > 0) {
    p.policy.repeats = req.repeats;
    p.policy.auto_repeats = false;
  } else if (req.repeats == kAutoRepeats) {
    p.policy.use_auto_repeats();
  }
  // The loss is checked at a step both arms reach; past the end is a usage error, not a step to
  // clamp silently (the seed band would be read at the wrong step).
  const int64_t last_step =
      std::min(p.baseline_config.integer("run.steps"), p.variant_config.integer("run.steps"));
  if (p.policy.check_step > last_step)
    throw UsageError((req.check_step >= 0 ? std::string("--check-step ") : "gate.check_step = ") +
                     std::to_string(p.policy.check_step) + " is past the last step (" +
                     std::to_string(last_step) + ")");
  if (p.mode == Mode::AB && p.policy.repeats < 5)
    p.warnings.push_back("too few repeats: " + std::to_string(p.policy.repeats) +
                         " per arm; performance verdicts need at least 5 (the exact Mann-Whitney p "
                         "cannot reach 0.05 below 4)");
}

// The knob class that says how the loss is judged, and where it comes from.
void classify(ComparisonPlan& p) {
  if (p.mode == Mode::AB) {
    p.changes = config::diff(p.baseline_config, p.variant_config);
    auto knobs = classify_changes(p.changes);
    p.changed_knobs = knobs.knobs;
    p.klass = knobs.klass;
    p.workload_changes = knobs.workload;
    // How the loss is judged: a declared alignment ([gate] alignment) is the user's contract and
    // wins; otherwise a workload change has no alignment verdict (still timed); otherwise an
    // external trainer's keys say nothing about its math, so its arms align exactly.
    if (p.policy.alignment)
      p.klass = *config::parse_knob_class(*p.policy.alignment);
    else if (!knobs.workload.empty())
      p.klass = config::Knob::Workload;
    else if (external::is_external(p.baseline_config) || external::is_external(p.variant_config))
      p.klass = config::Knob::Exact;
    p.warnings.insert(p.warnings.end(), knobs.warnings.begin(), knobs.warnings.end());
    if (p.changes.empty())
      p.warnings.push_back("the configs are identical: this is an A/A comparison");
    p.klass_source = "the keys that differ between the baseline and the variant";
  } else {
    const GoldenClass g = golden_knob_class(p.variant_config);
    p.klass = g.klass;
    p.changed_knobs = g.knobs;
    p.klass_source = g.source;
  }
  if (p.policy.alignment)
    p.klass_source = "the knob class (" + *p.policy.alignment +
                     ") is the one the variant declares ([gate] alignment)";
  if (p.policy.alignment && p.mode == Mode::Golden)
    p.klass = *config::parse_knob_class(*p.policy.alignment);
}

}  // namespace

ComparisonPlan plan_comparison(const CompareRequest& req) {
  ComparisonPlan p;
  p.out_dir = req.out_dir;
  p.mode = req.golden_file.empty() ? Mode::AB : Mode::Golden;
  p.baseline_path = req.baseline.config;
  p.variant_path = req.variant.config;
  p.golden_file = req.golden_file;

  const auto [bsets, vsets] = arm_sets(req);
  p.variant_config = config::Config::load(req.variant.config, vsets);
  p.baseline_config =
      p.mode == Mode::AB ? config::Config::load(req.baseline.config, bsets) : p.variant_config;
  const auto& bcfg = p.baseline_config;
  const auto& vcfg = p.variant_config;
  if (req.history_reference && p.mode == Mode::AB) {  // --against-history
    auto ref = req.history_reference(bcfg);
    p.reference_curve = std::move(ref.curve);
    p.reference_source = std::move(ref.source);
  }
  if (p.mode == Mode::Golden) {  // before any run starts
    p.golden = read_golden_file(req.golden_file);
    p.golden_curve = p.golden.curve;
    check_golden_length(req.golden_file, p.golden_curve, vcfg, req.steps > 0);
  }

  plan_policy(p, req);
  classify(p);
  p.gpu_slots = cuda_slots(bcfg, vcfg, req.parallel);
  p.parallel = !p.gpu_slots.empty() ? static_cast<int>(p.gpu_slots.size())
               : req.parallel > 0   ? req.parallel
                                    : auto_parallel(bcfg, vcfg);

  const fs::path arms = fs::path(req.out_dir) / "arms";
  const int64_t seed = bcfg.integer("run.seed");

  // Equivalence: full-length runs at the comparison seed (and the seed band).
  if (p.mode == Mode::AB)
    p.alignment.push_back(
        arm_run(Arm::Baseline, Role::Full, seed, "baseline", req.baseline, bsets, arms / "baseline", 0));
  p.alignment.push_back(arm_run(Arm::Variant, Role::Full, vcfg.integer("run.seed"), "variant", req.variant,
                                vsets, arms / "variant", 0));
  // A variant that brings a kernel has it checked against the exact math before anything runs
  // (an external trainer's kernels are its own: Lockstep cannot reach them).
  p.conformance = p.mode == Mode::AB && brings_kernels(p.changes) && !external::is_external(vcfg);
  // An external trainer says what it supports on its first metrics line: the rest of the plan
  // waits for the full runs (adopt_capabilities). Their baseline checkpoints for a probe, in case
  // it announces one (a trainer that does not ignores the request).
  p.awaits_capabilities = external::is_external(bcfg) || external::is_external(vcfg);
  if (!p.awaits_capabilities) {
    plan_checks(p, req, TrainerProtocol::own(), TrainerProtocol::own());
    return p;
  }
  if (p.mode == Mode::AB && p.klass == config::Knob::Approximate && req.probe && one_rank(bcfg) &&
      one_rank(vcfg) && bcfg.integer("run.steps") >= 2)
    add_probe_checkpoints(p);
  return p;
}

void adopt_capabilities(ComparisonPlan& p, const CompareRequest& req, const TrainerProtocol& baseline,
                        const TrainerProtocol& variant) {
  p.awaits_capabilities = false;
  plan_checks(p, req, baseline, variant);
}

namespace {

// What plan_checks' families share: the arms' --set lists, where their runs go, the seed, and
// what each arm's trainer announced.
struct CheckPlanning {
  std::vector<std::string> bsets, vsets;
  fs::path arms;
  int64_t seed = 0;
  const TrainerProtocol& btrainer;
  const TrainerProtocol& vtrainer;
  bool external = false;

  bool both(Capability c) const { return btrainer.has(c) && vtrainer.has(c); }
  // Which arm lacks a capability, for the notes: "the baseline's", "the variant's", "both arms'".
  std::string lacking(Capability c) const {
    const bool b = !btrainer.has(c), v = !vtrainer.has(c);
    return std::string(b && v ? "both arms' external trainers" : b ? "the baseline's external trainer" : "the variant's external trainer");
  }
  std::string protocol_of(Capability c) const {
    const auto& t = !btrainer.has(c) ? btrainer : vtrainer;
    return "protocol " + std::to_string(t.version);
  }
};

// What an external trainer lacks, said once per arm; the consequences follow where they apply.
void warn_lacking(ComparisonPlan& p, const CheckPlanning& c) {
  for (const auto& [who, t] :
       {std::pair<const char*, const TrainerProtocol*>{"baseline", &c.btrainer},
        {"variant", &c.vtrainer}}) {
    if (!t->external || t->lacks().empty() || (p.mode == Mode::Golden && who[0] == 'b')) continue;
    std::string lacks;
    for (auto cap : t->lacks()) lacks += (lacks.empty() ? "" : ", ") + std::string(to_string(cap));
    p.warnings.push_back(std::string("the ") + who + "'s external trainer speaks protocol " +
                         std::to_string(t->version) +
                         (t->version < 2 ? " (metrics only)" : "") + " and lacks " + lacks +
                         " (docs/protocol.md)");
  }
}

// How a timing repeat pair runs (docs/method.md "Timing in turns"): taking turns step by step needs
// one process per arm that runs Lockstep's own step loop or an external trainer that announced
// "turns".
void plan_interleave(ComparisonPlan& p, const CheckPlanning& c) {
  if (p.mode != Mode::AB) return;
  const auto& bcfg = p.baseline_config;
  const auto& vcfg = p.variant_config;
  const int64_t branks = bcfg.integer("parallel.world_size"),
                vranks = vcfg.integer("parallel.world_size");
  if (!p.policy.steps_in_turns())
    p.interleave_note = "[gate] interleave = \"repeat\"";
  else if (branks != vranks)
    p.interleave_note = "the arms run " + std::to_string(branks) + " and " +
                        std::to_string(vranks) +
                        " ranks: rank r takes turns with rank r of the other arm only when both "
                        "run as many, so the repeats run one after the other";
  else if (branks > 1 && c.external)
    p.interleave_note = "an external trainer runs " + std::to_string(branks) +
                        " ranks of its own: Lockstep hands turns to one process per arm, so the "
                        "repeats run one after the other";
  else if (!c.both(Capability::Turns))
    p.interleave_note = c.lacking(Capability::Turns) + " announced no turns (" +
                        c.protocol_of(Capability::Turns) + "): the repeats run one after the other";
  else
    p.interleave = Interleave::Step;
  // Both runs of a pair on the same CPUs, rank r of each on the r-th run.threads of those this
  // process may use: the cores of a VM differ in speed from moment to moment, and a run stays on
  // the core it started on.
  p.turn_ranks = static_cast<int>(branks);
  const auto threads =
      static_cast<size_t>(std::max(bcfg.integer("run.threads"), vcfg.integer("run.threads")));
  const std::vector<int> cpus = util::allowed_cpus();
  if (p.steps_in_turns() && cpus.size() >= threads * static_cast<size_t>(branks))
    for (size_t r = 0; r < static_cast<size_t>(branks); ++r)
      p.turn_cpus.emplace_back(cpus.begin() + static_cast<long>(r * threads),
                               cpus.begin() + static_cast<long>((r + 1) * threads));
}

// Approximate knobs: the noise envelope, K baseline runs at the comparison seed whose weights
// get rounding-sized noise each step (faults.weight_rounding_noise), each its own noise seed.
// Lockstep's own trainer injects it, an external one when it announced "noise"; golden mode (no
// baseline config) and a baseline trainer without it keep the seed band. True when it runs.
bool plan_envelope(ComparisonPlan& p, const CompareRequest& req, const CheckPlanning& c) {
  const bool envelope = p.klass == config::Knob::Approximate && p.mode == Mode::AB &&
                        c.btrainer.has(Capability::Noise);
  if (p.klass == config::Knob::Approximate && p.mode == Mode::AB && !envelope)
    p.warnings.push_back("the baseline's external trainer announced no weight noise (protocol " +
                         std::to_string(c.btrainer.version) +
                         "): the approximate change is judged by the seed band, not the noise "
                         "envelope");
  if (p.klass == config::Knob::Approximate) p.approximate_rule = envelope ? Rule::Envelope : Rule::SeedBand;
  if (!envelope) return false;
  const NoiseChoice noise = choose_envelope_noise(p.policy, p.baseline_config, p.variant_config,
                                                 c.btrainer, c.vtrainer);
  p.envelope_noise = noise.u;
  p.envelope_noise_source = noise.source;
  p.envelope_noise_dtype = noise.dtype;
  if (auto w = same_dtype_warning(p.policy, noise, p.variant_path, c.vtrainer.observed_compute);
      !w.empty())
    p.warnings.push_back(w);
  for (int64_t k = 1; k <= p.policy.envelope_runs; ++k) {
    const std::string label = "baseline-noise" + std::to_string(k);
    // Only its losses are read: no profile window (no Kineto, no trace) in this process.
    auto sets = with_noise(c.bsets, p.envelope_noise, k);
    sets.push_back("profile.window=0");
    p.alignment.push_back(arm_run(Arm::Baseline, Role::Envelope, c.seed, label, req.baseline,
                                  std::move(sets), c.arms / label, 0));
    p.alignment.back().noise_seed = k;
  }
  return true;
}

// Whether the function probe runs (else p.probe_note says why not), and its noise.
bool probe_runs(ComparisonPlan& p, const CompareRequest& req, const CheckPlanning& c,
                bool envelope) {
  const auto& bcfg = p.baseline_config;
  // For exact knobs, when the variant changes an implementation (an exact or approximate key: a
  // kernel, not only a fault or the sharding).
  const bool exact_kernel =
      p.klass == config::Knob::Exact && p.mode == Mode::AB && !c.external &&
      std::any_of(p.changes.begin(), p.changes.end(), [](const config::Change& ch) {
        return ch.knob == config::Knob::Exact || ch.knob == config::Knob::Approximate;
      });
  if (!(envelope || exact_kernel) || !req.probe) return false;
  bool probe = false;
  const int64_t steps = bcfg.integer("run.steps");
  if (!one_rank(bcfg) || !one_rank(p.variant_config))
    p.probe_note = "not run: the probe needs one rank and zero_stage = 0 on both arms";
  else if (steps < 2)
    p.probe_note = "not run: a 1-step run has no checkpoint before its last step";
  else if (!c.both(Capability::Probe))
    p.probe_note = "not run: " + c.lacking(Capability::Probe) + " announced no probe (" +
                   c.protocol_of(Capability::Probe) + ")";
  else if (c.external && p.probe_every == 0)
    p.probe_note = "not run: the baseline's full run was not asked for checkpoints";
  else
    probe = true;
  if (envelope) {
    p.probe_noise = p.envelope_noise;
    p.probe_noise_source = p.envelope_noise_source;
  } else {
    const auto r = variants::unit_roundoff(variants::Compute::FP32, bcfg.str("run.device"));
    p.probe_noise = r.u;
    p.probe_noise_source = "unit roundoff of fp32 (" + r.label + ")";
  }
  return probe;
}

// The function probe (probe_check.h): the baseline's full run checkpoints at 1/5, 2/5, ... of
// its steps; after it, forwards at those weights under the baseline's numerics, the variant's
// and K weight noises: the envelope's for approximate knobs; for exact knobs that change an
// implementation, the unit roundoff of fp32. The probe loads single-rank, unsharded checkpoints.
void plan_probe(ComparisonPlan& p, const CompareRequest& req, const CheckPlanning& c,
                bool envelope) {
  if (!probe_runs(p, req, c, envelope)) return;
  if (p.probe_every == 0) add_probe_checkpoints(p);
  auto probe_run = [&](Arm arm, const std::string& label, const ArmSpec& spec,
                       std::vector<std::string> sets, int64_t noise_seed) {
    sets.push_back("profile.window=0");  // a probe trains nothing: no profiler either
    p.probes.push_back(arm_run(arm, Role::Probe, c.seed, label, spec, std::move(sets),
                               c.arms / "probe" / label, 0));
    p.probes.back().job.probe_from = c.arms / "baseline";
    p.probes.back().noise_seed = noise_seed;
  };
  probe_run(Arm::Baseline, "baseline", req.baseline, c.bsets, 0);
  probe_run(Arm::Variant, "variant", req.variant, c.vsets, 0);
  for (int64_t k = 1; k <= p.policy.envelope_runs; ++k)
    probe_run(Arm::Baseline, "baseline-noise" + std::to_string(k), req.baseline,
              with_noise(c.bsets, p.probe_noise, k), k);
}

// Golden mode, approximate class, a golden file that carries its envelope (golden_file.h): that
// envelope judges, so no seed band runs.
// An envelope measured at a finer rounding than the variant's (an fp32 golden, a bf16 variant)
// is too narrow for it: the seed band judges, and the report says why.
void plan_golden_envelope(ComparisonPlan& p) {
  if (p.mode != Mode::Golden || !p.golden.has_envelope()) return;
  const auto [u, source] = envelope_noise(p.policy, p.variant_config, p.variant_config);
  if (u > p.golden.envelope_noise * (1 + 1e-12))
    p.golden_envelope_unusable =
        "the golden file's envelope was measured at weight noise " +
        p.golden.envelope_noise_source + ", finer than the variant's " + source +
        ": it is too narrow to judge it, so the seed band does (export the golden file at the "
        "variant's precision)";
  if (p.klass != config::Knob::Approximate || !p.golden_envelope_unusable.empty()) return;
  p.approximate_rule = Rule::Envelope;
  p.envelope_noise = p.golden.envelope_noise;
  p.envelope_noise_source = p.golden.envelope_noise_source;
}

// The seed band: the baseline at K more seeds; in golden mode (no baseline config) the variant.
void plan_seed_band(ComparisonPlan& p, const CompareRequest& req, const CheckPlanning& c) {
  if (p.approximate_rule != Rule::SeedBand) return;
  const bool golden = p.mode == Mode::Golden;
  const Arm arm = golden ? Arm::Variant : Arm::Baseline;
  for (int64_t k = 1; k <= p.policy.seeds; ++k) {
    const std::string label = to_string(arm) + std::string("-seed") + std::to_string(c.seed + k);
    auto sets = golden ? c.vsets : c.bsets;
    sets.push_back("run.seed=" + std::to_string(c.seed + k));
    p.alignment.push_back(arm_run(arm, Role::SeedBand, c.seed + k, label,
                                  golden ? req.variant : req.baseline, sets, c.arms / label, 0));
  }
}

// Speed: interleaved timing repeats A B, B A, A B, ... Warmup and profiled steps are never
// timed: each repeat runs them plus the timed steps.
void plan_timing(ComparisonPlan& p, const CompareRequest& req, const CheckPlanning& c) {
  if (p.mode != Mode::AB) return;
  const auto& bcfg = p.baseline_config;
  const int64_t window = std::min(
      bcfg.integer("run.warmup_steps") + bcfg.integer("profile.window") + p.policy.timing_steps,
      bcfg.integer("run.steps"));
  int idx = 0;
  // repeats = "auto": planned up to max_repeats; sequential.h runs as many as it needs.
  const int64_t planned = p.policy.auto_repeats ? p.policy.max_repeats : p.policy.repeats;
  for (int64_t i = 0; i < planned; ++i) {
    for (int k = 0; k < 2; ++k) {
      const bool baseline_first = (i % 2 == 0);
      const bool is_b = (k == 0) == baseline_first;
      char name[64];
      std::snprintf(name, sizeof name, "%02d-%s", ++idx, is_b ? "baseline" : "variant");
      p.timing.push_back(is_b ? arm_run(Arm::Baseline, Role::Timing, c.seed, "baseline",
                                        req.baseline, c.bsets, c.arms / "timing" / name, window)
                              : arm_run(Arm::Variant, Role::Timing,
                                        p.variant_config.integer("run.seed"), "variant",
                                        req.variant, c.vsets, c.arms / "timing" / name, window));
    }
  }
}

}  // namespace

void plan_checks(ComparisonPlan& p, const CompareRequest& req, const TrainerProtocol& btrainer,
                 const TrainerProtocol& vtrainer) {
  auto [bsets, vsets] = arm_sets(req);
  const CheckPlanning c{std::move(bsets),
                        std::move(vsets),
                        fs::path(req.out_dir) / "arms",
                        p.baseline_config.integer("run.seed"),
                        btrainer,
                        vtrainer,
                        btrainer.external || vtrainer.external};
  p.baseline_trainer = btrainer;
  p.variant_trainer = vtrainer;
  warn_lacking(p, c);
  plan_interleave(p, c);
  const bool envelope = plan_envelope(p, req, c);
  plan_probe(p, req, c, envelope);
  plan_golden_envelope(p);
  plan_seed_band(p, req, c);
  plan_timing(p, req, c);
}

}  // namespace lockstep::compare
