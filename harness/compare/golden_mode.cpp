#include "harness/compare/golden_mode.h"

#include <cmath>
#include <cstdio>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/workload_change.h"
#include "harness/util/exit_codes.h"

namespace lockstep::compare {

std::vector<double> read_golden(const std::string& path) { return read_golden_file(path).curve; }

GoldenClass golden_knob_class(const config::Config& variant) {
  const auto defaults = config::Config::parse("", "<defaults>");
  const auto changes = config::diff(defaults, variant);
  const KnobReport k = classify_changes(changes);
  GoldenClass g;
  g.klass = k.klass;
  for (const auto& key : k.optimizations) {
    bool workload = false;
    for (const auto& w : k.workload) workload = workload || w == key;
    if (!workload) g.knobs.push_back(key);
  }
  g.source = std::string("the knob class (") + config::knob_class_name(g.klass) +
             ") comes from the variant's own knobs against the defaults (" +
             (g.knobs.empty() ? std::string("none differ") : key_list(g.knobs)) + ")";
  return g;
}

void golden_seed_band(Alignment& a) {
  if (!a.band) return;
  auto& b = *a.band;
  b.lo = a.baseline_loss - b.half_width;
  b.hi = a.baseline_loss + b.half_width;
  char buf[320];
  if (std::isnan(b.half_width))
    std::snprintf(buf, sizeof buf,
                  "approximate knob: the variant's seed-to-seed spread at step %lld is unknown (a "
                  "seed's loss there is not finite), so |delta| %.2e to the golden loss cannot be "
                  "judged",
                  static_cast<long long>(a.check_step), a.abs_diff);
  else
    std::snprintf(
        buf, sizeof buf,
        "approximate knob: |delta| %.2e to the golden loss at step %lld is %s the "
        "variant's own seed-to-seed spread %.2e (%zu seeds; golden mode has no baseline "
        "config to run at more seeds)%s",
        a.abs_diff, static_cast<long long>(a.check_step), b.inside ? "within" : "outside",
        b.half_width, b.seeds.size(),
        a.equal_to_3dp ? "; also equal to three decimals" : "; not equal to three decimals");
  a.explanation = buf;
}

namespace {

std::string judged_by(const GoldenFile& g, const GoldenJudgement& j, config::Knob klass) {
  if (j.envelope && j.exact_by_envelope)
    return "an exact class across environments (" + key_list(j.source.differing) +
           " differ), judged by the golden file's own noise envelope, as the file asks "
           "(exact_across_environments = envelope)";
  if (j.envelope)
    return "judged by the golden file's own noise envelope (" +
           std::to_string(g.envelope_runs) + " perturbed runs at export, weight noise " +
           g.envelope_noise_source + ")";
  if (klass == config::Knob::Approximate)
    return g.format == 1 ? "a format-1 golden file (no envelope): judged by the variant's seed "
                           "band, the fallback for old files"
                         : "the golden file carries no envelope (exported with --no-envelope): "
                           "judged by the variant's seed band";
  if (klass == config::Knob::Exact && !j.source.differing.empty())
    return "an exact class across environments (" + key_list(j.source.differing) +
           " differ), judged by the tolerance (the file says exact_across_environments = " +
           to_string(g.exact_across) + (g.has_envelope() ? ")" : ", or carries no envelope)");
  return "judged as the class says; the golden file's envelope is not needed";
}

}  // namespace

GoldenJudgement golden_judgement(const GoldenFile& g, config::Knob klass,
                                 const std::map<std::string, std::string>& here, double factor,
                                 const std::string& unusable) {
  GoldenJudgement j;
  j.source.format = g.format;
  j.source.environment = g.environment;
  j.source.differing = environment_differences(g.environment, here);
  j.source.envelope = g.has_envelope();
  const bool usable = g.has_envelope() && unusable.empty();
  j.exact_by_envelope = klass == config::Knob::Exact && usable &&
                        g.exact_across == ExactAcross::Envelope && !j.source.differing.empty();
  if (usable && (klass == config::Knob::Approximate || j.exact_by_envelope)) {
    EnvelopeInput e;
    e.values = g.envelope;
    for (int64_t k = 1; k <= g.envelope_runs; ++k) e.noise_seeds.push_back(k);
    e.noise = g.envelope_noise;
    e.noise_source = g.envelope_noise_source;
    e.factor = factor;
    e.window = g.envelope_window;
    j.envelope = std::move(e);
  }
  j.source.exact_by_envelope = j.exact_by_envelope;
  j.source.judged_by = usable || !g.has_envelope() ? judged_by(g, j, klass) : unusable;
  return j;
}

void golden_envelope_wording(Alignment& a, bool exact_by_envelope) {
  if (a.rule != Rule::Envelope) return;
  const std::string from = "approximate knob: ";
  if (a.explanation.rfind(from, 0) == 0)
    a.explanation = (exact_by_envelope ? std::string("exact knob across environments, by the "
                                                     "golden file's noise envelope: ")
                                       : std::string("approximate knob, by the golden file's "
                                                     "noise envelope: ")) +
                    a.explanation.substr(from.size());
  if (exact_by_envelope) a.klass = config::Knob::Exact;
}

}  // namespace lockstep::compare
