#include "harness/vocab/gate_policy.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <variant>

#include "harness/util/format.h"

namespace lockstep::gate {

using config::KeySpec;
using config::Knob;

const config::SectionSchema& gate_schema() {
  static const config::SectionSchema s{
      "gate",
      "The comparison's pass/fail policy (harness/gate).",
      {
          KeySpec::Float("tolerance", 5e-4, "max |loss delta| at check_step")
              .range(0, 1e9)
              .kind(Knob::None),
          KeySpec::Int("check_step", 0, "step whose loss must agree (0 = last)")
              .range(0, 1e12)
              .kind(Knob::None),
          KeySpec::Int("envelope_runs", 3,
                       "approximate knobs: perturbed baseline runs behind the noise envelope")
              .range(1, 20)
              .kind(Knob::None),
          KeySpec::Float("envelope_factor", 3.0,
                         "approximate knobs: |delta| must stay within this x the envelope")
              .range(0.1, 1000)
              .kind(Knob::None),
          KeySpec::Float("probe_factor", 3.0,
                         "the function probe: at the baseline's weights every kernel input and output "
                         "of the variant must stay within this x the noise probes' envelope")
              .range(0.1, 1000)
              .kind(Knob::None),
          KeySpec::Float("envelope_noise", 0.0,
                         "relative weight noise of the envelope's runs (0 = the unit roundoff "
                         "of the variant's compute dtype)")
              .range(0, 0.1)
              .kind(Knob::None),
          KeySpec::Float("curve_window_pct", 20.0,
                         "the curve rule judges the mean |delta| over this last share of steps")
              .range(1, 100)
              .kind(Knob::None),
          KeySpec::Int("seeds", 2,
                       "extra seeds for the seed band (approximate knobs in golden mode or with "
                       "an external trainer)")
              .range(1, 100)
              .kind(Knob::None),
          KeySpec::Int("repeats", 5,
                       "timing repeats per arm, or \"auto\": add repeat pairs until every timing "
                       "check is decisive (a group-sequential test, docs/method.md \"Repeats until "
                       "decisive\")")
              .range(1, 1000)
              .one_of({"auto"})
              .kind(Knob::None),
          KeySpec::Int("max_repeats", 24,
                       "repeats = \"auto\": at most this many repeats per arm (the last look)")
              .range(Policy::kLookEvery, 1000)
              .kind(Knob::None),
          KeySpec::Float("max_minutes", 30.0,
                         "repeats = \"auto\": start no more repeats once the comparison would "
                         "run past this many minutes")
              .range(0.01, 1e6)
              .kind(Knob::None),
          KeySpec::Int("timing_steps", 200,
                       "timed steps per repeat (a repeat never runs past run.steps)")
              .range(1, 1e9)
              .kind(Knob::None),
          KeySpec::Str("interleave", "step",
                       "a timing repeat pair: step (both runs at once, taking turns step by "
                       "step; matched pairs) | repeat (one after the other)")
              .one_of({"step", "repeat"})
              .kind(Knob::None),
          KeySpec::Int("p99_min_samples", 900,
                       "pooled timed steps per arm from which the tail check is the P99; fewer: "
                       "the maximum, named as such")
              .range(100, 1e12)
              .kind(Knob::None),
          KeySpec::Float("alpha", 0.05, "significance level").range(1e-6, 0.5).kind(Knob::None),
          KeySpec::Int("bootstrap", 2000, "bootstrap resamples").range(100, 1e7).kind(Knob::None),
          KeySpec::Float("max_p99_regression_pct", 0.0,
                         "P99 step latency may not regress significantly by more")
              .range(0, 1e6)
              .kind(Knob::None),
          KeySpec::Float("max_slowdown_pct", 0.0, "tokens/s may not regress significantly by more")
              .range(0, 100)
              .kind(Knob::None),
          KeySpec::Float("min_speedup_pct", std::nullopt,
                         "tokens/s must improve significantly by at least this")
              .range(-100, 1e6)
              .kind(Knob::None)
              .unset_by_default(),
          KeySpec::Float("min_memory_saving_pct", std::nullopt,
                         "peak memory per rank must fall by at least this")
              .range(-1e6, 100)
              .kind(Knob::None)
              .unset_by_default(),
          KeySpec::Str("on_inconclusive", "pass",
                       "what a timing check whose CI straddles its bound does to the exit: pass | "
                       "fail")
              .one_of({"pass", "fail"})
              .kind(Knob::None),
          KeySpec::Str("alignment", std::nullopt,
                       "how the loss must align: exact | approximate (noise envelope) | none "
                       "(unset: from the changed keys' classes; an external arm: exact)")
              .one_of({"exact", "approximate", "none"})
              .kind(Knob::None)
              .unset_by_default(),
      },
      nullptr,
  };
  return s;
}

ResolvedPolicy resolve_policy(const std::string& policy_file, const config::Config& variant,
                              const std::string& variant_path) {
  if (!policy_file.empty()) {
    // alignment is the variant's statement about its own math, not a threshold: a policy file
    // that leaves it unset keeps the variant's.
    auto p = Policy::from(config::Config::load(policy_file));
    if (!p.alignment && variant.has_value("gate.alignment"))
      p.alignment = variant.str("gate.alignment");
    return {p, "--policy " + policy_file};
  }
  bool custom = false;
  for (const auto& k : gate_schema().keys) custom = custom || variant.is_set("gate." + k.name);
  return {Policy::from(variant), custom ? "[gate] of " + variant_path : "defaults"};
}

std::vector<int64_t> Policy::looks() const {
  if (!auto_repeats) return {repeats};
  std::vector<int64_t> at;
  for (int64_t n = kLookEvery; n < max_repeats; n += kLookEvery) at.push_back(n);
  at.push_back(max_repeats);
  return at;
}

double Policy::check_level() const {
  return alpha / static_cast<double>(looks().size());
}

std::string Policy::ci_percent() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%%", 100.0 * (1.0 - check_level()));
  return buf;
}

OnInconclusive on_inconclusive_from_text(const std::string& word) {
  for (OnInconclusive o : {OnInconclusive::Pass, OnInconclusive::Fail})
    if (word == to_string(o)) return o;
  throw std::invalid_argument("[gate] on_inconclusive: \"" + word + "\" is neither pass nor fail");
}

Policy Policy::from(const config::Config& c) {
  Policy p;
  p.tolerance = c.number("gate.tolerance");
  p.check_step = c.integer("gate.check_step");
  p.seeds = c.integer("gate.seeds");
  p.envelope_runs = c.integer("gate.envelope_runs");
  p.envelope_factor = c.number("gate.envelope_factor");
  p.envelope_noise = c.number("gate.envelope_noise");
  p.probe_factor = c.number("gate.probe_factor");
  p.curve_window_pct = c.number("gate.curve_window_pct");
  if (std::holds_alternative<std::string>(c.value("gate.repeats")))  // "auto"
    p.use_auto_repeats();
  else
    p.repeats = c.integer("gate.repeats");
  p.max_repeats = c.integer("gate.max_repeats");
  p.max_minutes = c.number("gate.max_minutes");
  p.timing_steps = c.integer("gate.timing_steps");
  p.interleave = c.str("gate.interleave");
  p.p99_min_samples = c.integer("gate.p99_min_samples");
  p.on_inconclusive = on_inconclusive_from_text(c.str("gate.on_inconclusive"));
  p.alpha = c.number("gate.alpha");
  p.bootstrap = c.integer("gate.bootstrap");
  p.max_p99_regression_pct = c.number("gate.max_p99_regression_pct");
  p.max_slowdown_pct = c.number("gate.max_slowdown_pct");
  if (c.has_value("gate.min_speedup_pct")) p.min_speedup_pct = c.number("gate.min_speedup_pct");
  if (c.has_value("gate.min_memory_saving_pct"))
    p.min_memory_saving_pct = c.number("gate.min_memory_saving_pct");
  if (c.has_value("gate.alignment")) p.alignment = c.str("gate.alignment");
  return p;
}

std::string Policy::describe() const {
  std::ostringstream o;
  o << "loss at check step within " << tolerance << " and mean |delta| over the last "
    << curve_window_pct << "% of steps within it (exact knobs), or both within " << envelope_factor
    << " x the noise envelope of " << util::count_of(envelope_runs, "perturbed baseline run")
    << " (approximate knobs; the seed band in golden mode and with external trainers), and at the "
       "baseline's checkpoints every kernel input and output within "
    << probe_factor << " x the noise probes' envelope (the function probe)\n"
    << "P99 step latency: no significant regression beyond " << max_p99_regression_pct << "%\n"
    << "tokens/s: no significant slowdown beyond " << max_slowdown_pct << "%\n";
  if (min_speedup_pct)
    o << "tokens/s: significant speed-up of at least " << *min_speedup_pct << "%\n";
  if (min_memory_saving_pct)
    o << "peak memory per rank: saving of at least " << *min_memory_saving_pct << "%\n";
  if (alignment) o << "loss alignment declared: " << *alignment << "\n";
  o << "every reported value finite\n"
    << "significance: alpha " << alpha << ", ";
  if (auto_repeats) {
    std::string at;
    for (int64_t n : looks()) at += (at.empty() ? "" : ", ") + std::to_string(n);
    o << "repeats \"auto\": looks at " << at << " repeats per arm (at most " << max_minutes
      << " minutes), each at level alpha/" << looks().size() << " = " << check_level();
  } else {
    o << util::count_of(repeats, "repeat") << " per arm";
  }
  o << ", " << ci_percent() << " CIs (bootstrap, " << bootstrap
    << " resamples; tokens/s of pairs taking turns: paired t), Holm-corrected over the timing "
       "checks\n"
    << "timing pairs: "
    << (steps_in_turns() ? "baseline and variant at once, taking turns step by step"
                         : "one run after the other")
    << " (interleave = \"" << interleave << "\")\n"
    << "tail statistic: P99 from " << p99_min_samples
    << " pooled timed steps per arm, else the maximum ("
    << util::count_of(timing_steps, "timed step") << " per repeat)\n"
    << "inconclusive timing check (CI straddles its bound): " << to_string(on_inconclusive);
  return o.str();
}

}  // namespace lockstep::gate
