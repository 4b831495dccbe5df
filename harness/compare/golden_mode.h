// `compare --golden FILE VARIANT`: one arm against a loss curve from a file. Without a baseline
// config there are no changed keys and no second arm, so two things come from elsewhere:
//   the knob class   from the variant's own knobs against the defaults (bf16 is approximate
//                    there as in an A/B comparison), and the report says so;
//   the seed band    for an approximate class, from the variant itself at K more seeds (the
//                    golden file has one seed), centred on the golden loss.
//   the envelope     a golden file of format 2 (harness/compare/golden_file.h) may carry the
//                    noise envelope measured where it was exported: an approximate class is then
//                    judged against c x that envelope instead of the seed band, and an exact one
//                    too when the environments differ and the file says exact_across_environments
//                    = envelope. A file without one (format 1, or --no-envelope) keeps the band.
// Nothing is timed: there is nothing to time against.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/golden_file.h"
#include "harness/vocab/compare_result.h"
#include "harness/config/config.h"

namespace lockstep::compare {

// Reads a golden file of "step loss" lines; throws UsageError naming file and line.
std::vector<double> read_golden(const std::string& path);

struct GoldenClass {
  config::Knob klass = config::Knob::Exact;  // Exact | Approximate
  std::vector<std::string> knobs;  // the variant's exact/approximate keys that differ from defaults
  std::string source;              // one sentence for the report: where the class came from
};

GoldenClass golden_knob_class(const config::Config& variant);

// An approximate alignment whose band was measured on the variant's seeds (losses[0] = the
// variant at the comparison seed): the band is re-centred on the golden loss and the explanation
// says whose spread it is.
void golden_seed_band(Alignment& a);

// How the golden file judges a variant of class `klass` that ran in environment `here`: the
// report's GoldenSource, and the file's envelope where it judges (factor = the policy's c).
struct GoldenJudgement {
  GoldenSource source;
  std::optional<EnvelopeInput> envelope;
  bool exact_by_envelope = false;  // an exact class, judged by the envelope across environments
};
// `unusable`: why the file's envelope cannot judge this variant ("" = it can).
GoldenJudgement golden_judgement(const GoldenFile& g, config::Knob klass,
                                 const std::map<std::string, std::string>& here, double factor,
                                 const std::string& unusable = "");

// After check_alignment judged by the golden file's envelope: the explanation says whose envelope
// it is (and, for an exact class, why not the tolerance); the class is put back to Exact.
void golden_envelope_wording(Alignment& a, bool exact_by_envelope);

}  // namespace lockstep::compare
