#include "harness/compare/analyse.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "harness/compare/comparison_stats.h"
#include "harness/registry/catalog.h"
#include "harness/compare/golden_mode.h"
#include "harness/compare/memory_per_rank.h"
#include "harness/compare/probe_check.h"
#include "harness/compare/workload_change.h"
#include "harness/stats/statistics.h"

namespace lockstep::compare {
namespace {

std::vector<double> losses_of(const std::vector<StepRecord>& recs) {
  std::vector<double> v;
  for (const auto& r : recs) v.push_back(r.loss);
  return v;
}

std::vector<double> timed_ms_of(const std::vector<StepRecord>& recs) {
  std::vector<double> v;
  for (const auto& r : recs)
    if (r.timed && std::isfinite(r.loss)) v.push_back(r.step_ms);
  return v;
}

// The loss at `step` (1-based), NaN when the curve does not reach it.
double loss_at(const std::vector<double>& curve, int64_t step) {
  return step >= 1 && step <= static_cast<int64_t>(curve.size())
             ? curve[static_cast<size_t>(step - 1)]
             : NAN;
}

ArmResult& arm_of(CompareResult& r, Arm which) {
  return which == Arm::Baseline ? r.baseline : r.variant;
}

void fail_arm(CompareResult& r, Arm which, const runs::RunOutcome& o) {
  ArmResult& arm = arm_of(r, which);
  arm.status = o.status;
  arm.failure = o.failure;
  arm.failed_step = o.failed_step;
  if (!r.failed_arm) {
    r.failed_arm = which;
    r.failure = to_string(o.status) +
                (o.failed_step ? " at step " + std::to_string(o.failed_step) : "") + ": " +
                o.failure;
  }
}

// The index of an arm's full run in plan.alignment (the plan always has one per arm it runs).
size_t full_run(const ComparisonPlan& plan, Arm arm) {
  for (size_t i = 0; i < plan.alignment.size(); ++i)
    if (plan.alignment[i].arm == arm && plan.alignment[i].role == Role::Full) return i;
  throw std::logic_error(std::string("comparison plan without a full ") + to_string(arm) + " run");
}

void fill_arm_from_alignment(ArmResult& arm, const ArmRun& run, const runs::RunOutcome& o) {
  arm.alignment_run = o.summary;
  arm.loss_curve = losses_of(o.records);
  arm.peak_memory_bytes = o.summary.peak_memory_bytes;
  arm.run_dir = run.job.dir.string();
}

}  // namespace

CompareResult result_from_plan(const ComparisonPlan& plan) {
  CompareResult r;
  r.out_dir = plan.out_dir;
  r.mode = plan.mode;
  r.policy = plan.policy;
  r.policy_source = plan.policy_source;
  r.warnings = plan.warnings;
  r.baseline_trainer = plan.baseline_trainer;
  r.variant_trainer = plan.variant_trainer;
  r.changes = plan.changes;
  r.changed_knobs = plan.changed_knobs;
  r.klass_source = plan.klass_source;
  r.baseline.label = "baseline";
  r.variant.label = "variant";
  r.baseline.name = plan.baseline_config.str("run.name");
  r.variant.name = plan.variant_config.str("run.name");
  r.baseline.config_path = plan.mode == Mode::AB ? plan.baseline_path : plan.golden_file;
  r.variant.config_path = plan.variant_path;
  auto refs = [](const config::Config& c) {
    std::vector<PluginRef> out;
    for (const auto& p : registry::plugin_files(c)) out.push_back(PluginRef{p.file, p.sha256});
    return out;
  };
  if (plan.mode == Mode::AB) r.baseline.plugins = refs(plan.baseline_config);
  r.variant.plugins = refs(plan.variant_config);
  return r;
}

namespace {

// The noise envelope's curves (Rule::Envelope), from the perturbed baseline runs.
std::optional<EnvelopeInput> envelope_input(const ComparisonPlan& plan,
                                            const std::vector<runs::RunOutcome>& outs,
                                            CompareResult& r) {
  if (plan.approximate_rule != Rule::Envelope) return std::nullopt;
  EnvelopeInput e;
  e.noise = plan.envelope_noise;
  e.noise_source = plan.envelope_noise_source;
  e.noise_dtype = plan.envelope_noise_dtype;
  e.factor = r.policy.envelope_factor;
  for (size_t i = 0; i < plan.alignment.size(); ++i) {
    if (plan.alignment[i].role != Role::Envelope) continue;
    if (!outs[i].ok()) {  // a perturbed baseline that fails is the baseline's failure
      fail_arm(r, Arm::Baseline, outs[i]);
      continue;
    }
    e.curves.push_back(losses_of(outs[i].records));
    e.noise_seeds.push_back(plan.alignment[i].noise_seed);
  }
  return e;
}

// The seed band's losses at the check step (Rule::SeedBand), from the runs at other seeds.
std::optional<BandInput> band_input(const ComparisonPlan& plan,
                                    const std::vector<runs::RunOutcome>& outs, CompareResult& r) {
  if (plan.approximate_rule != Rule::SeedBand) return std::nullopt;
  BandInput b;
  const int64_t cs = r.policy.check_step > 0 ? r.policy.check_step
                                             : static_cast<int64_t>(r.baseline.loss_curve.size());
  // Golden mode measures the spread on the variant's seeds (harness/compare/golden_mode.h).
  const bool golden = plan.mode == Mode::Golden;
  const Arm band_which = golden ? Arm::Variant : Arm::Baseline;
  const ArmResult& band_arm = arm_of(r, band_which);
  b.seeds.push_back(plan.alignment[full_run(plan, band_which)].seed);
  b.losses.push_back(loss_at(band_arm.loss_curve, cs));
  for (size_t i = 0; i < plan.alignment.size(); ++i) {
    if (plan.alignment[i].role != Role::SeedBand) continue;
    if (!outs[i].ok()) {
      fail_arm(r, band_which, outs[i]);
      continue;
    }
    b.seeds.push_back(plan.alignment[i].seed);
    b.losses.push_back(loss_at(losses_of(outs[i].records), cs));
  }
  return b;
}

// Golden mode: the golden file's own envelope where it judges (golden_mode.h), its environment
// for the report. True when it judges an exact class (across environments).
bool golden_rule(const ComparisonPlan& plan, CompareResult& r,
                 std::optional<EnvelopeInput>& envelope) {
  GoldenJudgement g = golden_judgement(plan.golden, plan.klass, r.env, r.policy.envelope_factor,
                                       plan.golden_envelope_unusable);
  envelope = std::move(g.envelope);
  r.golden = std::move(g.source);
  if (plan.klass == config::Knob::Approximate && !envelope)
    r.warnings.push_back(r.golden->judged_by);
  return g.exact_by_envelope;
}

}  // namespace

CompareResult analyse_alignment(const ComparisonPlan& plan,
                                const std::vector<runs::RunOutcome>& outs) {
  CompareResult r = result_from_plan(plan);

  if (plan.mode == Mode::AB) {
    const size_t bi = full_run(plan, Arm::Baseline);
    fill_arm_from_alignment(r.baseline, plan.alignment[bi], outs[bi]);
    fill_memory_per_rank(r.baseline, outs[bi].summary, plan.baseline_config);
    r.env = outs[bi].summary.env;
    if (!outs[bi].ok()) fail_arm(r, Arm::Baseline, outs[bi]);
  } else {
    r.baseline.loss_curve = plan.golden_curve;
    r.baseline.name = "golden";
    r.loss_reference = "golden file " + plan.golden_file;
  }
  const size_t vi = full_run(plan, Arm::Variant);
  fill_arm_from_alignment(r.variant, plan.alignment[vi], outs[vi]);
  fill_memory_per_rank(r.variant, outs[vi].summary, plan.variant_config);
  if (plan.mode == Mode::Golden) r.env = outs[vi].summary.env;
  if (!outs[vi].ok()) fail_arm(r, Arm::Variant, outs[vi]);

  std::optional<EnvelopeInput> envelope = envelope_input(plan, outs, r);
  const bool exact_by_envelope = plan.mode == Mode::Golden && golden_rule(plan, r, envelope);
  // The class whose rule judges: an exact class across environments takes the envelope's.
  const config::Knob rule_class = exact_by_envelope ? config::Knob::Approximate : plan.klass;
  const std::optional<BandInput> band = band_input(plan, outs, r);
  const bool from_history = plan.mode == Mode::AB && !plan.reference_curve.empty();
  if (from_history) {
    r.loss_reference = plan.reference_source.empty() ? "history run" : plan.reference_source;
    r.warnings.push_back("loss reference from " + r.loss_reference +
                         " (--against-history): the variant's loss is checked against that "
                         "recorded baseline curve; the fresh baseline run is still timed");
  }
  r.alignment = check_alignment(from_history ? plan.reference_curve : r.baseline.loss_curve,
                                r.variant.loss_curve, r.policy.check_step, r.policy.tolerance,
                                rule_class, band, envelope, r.policy.curve_window_pct);
  if (plan.klass == config::Knob::Workload) mark_workload_change(r.alignment, plan.workload_changes);
  if (plan.mode == Mode::Golden) golden_seed_band(r.alignment);
  if (plan.mode == Mode::Golden) golden_envelope_wording(r.alignment, exact_by_envelope);
  if (plan.mode == Mode::AB && !r.failed_arm && r.alignment.applicable && !r.alignment.aligned)
    r.warnings.push_back(
        "not timed: the loss does not align, and an optimization that changes the math is rejected "
        "before its speed matters");
  if (plan.mode == Mode::AB && r.baseline.peak_memory_bytes > 0 && r.variant.peak_memory_bytes > 0)
    r.delta.memory_pct = 100.0 * (static_cast<double>(r.variant.peak_memory_bytes) /
                                      static_cast<double>(r.baseline.peak_memory_bytes) -
                                  1.0);
  memory_per_rank_deltas(r);
  return r;
}

void analyse_probe(const ComparisonPlan& plan, const std::vector<runs::RunOutcome>& outs,
                   CompareResult& r) {
  ProbeCheck& pc = r.alignment.probe;
  pc.note = plan.probe_note;
  if (plan.probes.empty()) return;
  if (r.failed_arm) {
    pc.note = "not run: an arm failed";
    return;
  }
  std::vector<train::ProbeRecord> recs;
  for (size_t i = 0; i < plan.probes.size(); ++i) {
    runs::RunOutcome o = i < outs.size() ? outs[i] : runs::RunOutcome{};
    if (i >= outs.size()) o.status = RunStatus::NotRun, o.failure = "no outcome";
    if (o.ok()) {
      try {
        recs.push_back(train::read_probe(plan.probes[i].job.dir));
        continue;
      } catch (const std::exception& e) {
        o.status = RunStatus::UnreadableProbe, o.failure = e.what();
      }
    }
    o.failure = "function probe " + plan.probes[i].job.label + ": " + o.failure;
    fail_arm(r, plan.probes[i].arm, o);
    pc.note = "not run: the " + plan.probes[i].job.label + " probe " + to_string(o.status);
    return;
  }
  const std::vector<train::ProbeRecord> noise(recs.begin() + 2, recs.end());
  try {
    pc = judge_probe(recs[0], recs[1], noise, r.policy.probe_factor);
    pc.noise = plan.probe_noise;
    pc.noise_source = plan.probe_noise_source;
  } catch (const std::invalid_argument& e) {
    pc.note = std::string("not run: ") + e.what();
    return;
  }
  Alignment& a = r.alignment;
  if ((a.rule != Rule::Envelope && a.rule != Rule::Tolerance) || !a.applicable) return;
  char buf[400];
  if (pc.passed)
    std::snprintf(buf, sizeof buf,
                  "; the function probe at %zu checkpoints is inside: largest ratio %.2f (%s at "
                  "step %lld) <= %g",
                  pc.steps.size(), pc.ratio_max, pc.at_tensor.c_str(),
                  static_cast<long long>(pc.at_step), pc.factor);
  else
    std::snprintf(buf, sizeof buf,
                  "; the function probe is OUTSIDE: at the baseline's own weights the variant's "
                  "%s differs %.2f x the noise envelope at step %lld (bound %g; first outside in "
                  "forward order: %s at step %lld)",
                  pc.at_tensor.c_str(), pc.ratio_max, static_cast<long long>(pc.at_step),
                  pc.factor, pc.first_outside_tensor.c_str(),
                  static_cast<long long>(pc.first_outside_step));
  a.explanation += buf;
  if (a.aligned && !pc.passed) {
    a.aligned = false;
    if (plan.mode == Mode::AB && !r.failed_arm)
      r.warnings.push_back(
          "not timed: the function probe shows the variant computes another function at the "
          "same weights, and an optimization that changes the math is rejected before its speed "
          "matters");
  }
}

bool should_time(const CompareResult& r) {
  return r.mode == Mode::AB && !r.failed_arm && (r.alignment.aligned || !r.alignment.applicable);
}

namespace {

// Whether each arm's timing repeats reproduced its full run's losses bit for bit.
void check_determinism(CompareResult& r, const std::vector<std::vector<double>>& curves_b,
                       const std::vector<std::vector<double>>& curves_v) {
  r.determinism.checked = true;
  const std::string db = first_nondeterminism(r.baseline.loss_curve, curves_b);
  const std::string dv = first_nondeterminism(r.variant.loss_curve, curves_v);
  r.determinism.baseline_ok = db.empty();
  r.determinism.variant_ok = dv.empty();
  r.determinism.detail =
      db.empty() && dv.empty()
          ? "every repeat reproduced its full run bit for bit"
          : (db.empty() ? "" : "baseline " + db) +
                (dv.empty() ? "" : (db.empty() ? "" : "; ") + std::string("variant ") + dv);
}

std::vector<double> pooled_of(const ArmResult& a) {
  std::vector<double> pooled;
  for (const auto& x : a.step_ms_repeats) pooled.insert(pooled.end(), x.begin(), x.end());
  return pooled;
}

// One arm's medians, MFU (its own peak's and the common one's) and pooled step-time percentiles.
void summarise_arm(CompareResult& r, ArmResult& arm) {
  median_with_ci(arm.tokens_per_sec_repeats, r.policy, &arm.tokens_per_sec,
                 &arm.tokens_per_sec_ci_lo, &arm.tokens_per_sec_ci_hi);
  if (!arm.mfu_repeats.empty()) arm.mfu = stats::median(arm.mfu_repeats);
  // An arm cannot beat its own peak: above 100% the peak is wrong (a CPU calibration cached
  // while other processes shared the cores read fp32 at a third of its idle value).
  if (arm.mfu && *arm.mfu > 1.0) {
    const std::string src = arm.repeats.empty() ? "" : arm.repeats.front().peak_flops_source;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.0f%%", 100.0 * *arm.mfu);
    r.warnings.push_back("the " + arm.label + " arm's MFU is " + pct + " of its own peak (" + src +
                         "): the peak is below what the arm achieved, so it is stale or was "
                         "measured under load; its MFU figures are not to be trusted until "
                         "`lockstep calibrate` measures the peak again on an idle machine");
  }
  arm.mfu_common_repeats.clear();
  if (std::isfinite(r.common_peak.flops))
    for (const auto& rep : arm.repeats)
      arm.mfu_common_repeats.push_back(rep.flops_per_token * rep.tokens_per_sec /
                                       r.common_peak.flops);
  if (!arm.mfu_common_repeats.empty()) arm.mfu_common = stats::median(arm.mfu_common_repeats);
  const std::vector<double> pooled = pooled_of(arm);
  arm.step_ms = Percentiles{stats::percentile(pooled, 50), stats::percentile(pooled, 95),
                            stats::percentile(pooled, 99), stats::mean(pooled)};
  arm.step_ms_n = static_cast<int64_t>(pooled.size());
  arm.step_ms_tail = stats::percentile(pooled, r.tail.q);
}

// The arms' deltas (throughput, MFU, P50, the tail) and the power of the timing checks.
void timing_deltas(const ComparisonPlan& plan, CompareResult& r) {
  r.delta.tokens_per_sec_pct =
      plan.steps_in_turns() ? paired_throughput_delta(r.baseline.tokens_per_sec_repeats,
                                                      r.variant.tokens_per_sec_repeats, r.policy)
                            : throughput_delta(r.baseline.tokens_per_sec_repeats,
                                               r.variant.tokens_per_sec_repeats, r.policy);
  r.delta.mfu_pts = mfu_delta(r.baseline.mfu_repeats, r.variant.mfu_repeats, r.policy);
  r.delta.mfu_common_pts =
      mfu_delta(r.baseline.mfu_common_repeats, r.variant.mfu_common_repeats, r.policy);
  r.delta.p50_ms_pct =
      latency_delta(r.baseline.step_ms_repeats, r.variant.step_ms_repeats, 50, r.policy);
  r.delta.p99_ms_pct =
      latency_delta(r.baseline.step_ms_repeats, r.variant.step_ms_repeats, r.tail.q, r.policy);
  // The MDEs at the strictest level a check of the Holm family faces (alpha / checks): the
  // smallest effect this comparison could have failed a check on.
  r.power =
      timing_power(r.baseline, r.variant, r.tail.q,
                   r.policy.check_level() / timing_family_size(r.policy), plan.steps_in_turns());
}

}  // namespace

void analyse_timing(const ComparisonPlan& plan, const std::vector<runs::RunOutcome>& outs,
                    CompareResult& r) {
  std::vector<std::vector<double>> curves_b, curves_v;
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto& o = outs[i];
    const bool is_b = plan.timing[i].arm == Arm::Baseline;
    ArmResult& arm = is_b ? r.baseline : r.variant;
    if (!o.ok()) {
      fail_arm(r, plan.timing[i].arm, o);
      break;
    }
    arm.repeats.push_back(o.summary);
    arm.tokens_per_sec_repeats.push_back(o.summary.tokens_per_sec);
    if (o.summary.mfu) arm.mfu_repeats.push_back(*o.summary.mfu);
    arm.step_ms_repeats.push_back(timed_ms_of(o.records));
    (is_b ? curves_b : curves_v).push_back(losses_of(o.records));
  }
  if (r.failed_arm || outs.size() < plan.timing.size()) return;

  r.timed = true;
  r.repeats = static_cast<int64_t>(r.baseline.repeats.size());  // per arm (interleaved pairs)
  r.too_few_repeats = r.repeats < 5;
  check_determinism(r, curves_b, curves_v);
  r.tail = tail_statistic(static_cast<int64_t>(pooled_of(r.baseline).size()),
                          static_cast<int64_t>(pooled_of(r.variant).size()),
                          r.policy.p99_min_samples);
  // MFU against one common peak as well as each arm's own (a bf16 arm's own peak is higher).
  r.common_peak = common_peak(r.baseline, r.variant);
  for (auto* arm : {&r.baseline, &r.variant}) summarise_arm(r, *arm);
  aggregate_profile(r.baseline);
  aggregate_profile(r.variant);
  r.breakdown = compare_breakdown(r.baseline, r.variant);
  // Pairs that took turns step by step shared the host's state step for step: judged as
  // matched pairs (docs/method.md "Timing in turns"); repeats run one after the other as two samples.
  r.interleave = plan.interleave;
  r.interleave_note = plan.interleave_note;
  timing_deltas(plan, r);
}

}  // namespace lockstep::compare
