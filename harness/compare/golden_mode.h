// `compare --golden FILE VARIANT`: one arm against a loss curve from a file. Without a baseline
// config there are no changed keys and no second arm, so two things come from elsewhere:
//   the knob class   from the variant's own knobs against the defaults (bf16 is approximate
//                    there as in an A/B comparison), and the report says so;
//   the seed band    for an approximate class, from the variant itself at K more seeds (the
//                    golden file has one seed), centred on the golden loss.
// Nothing is timed: there is nothing to time against.
#pragma once

#include <string>
#include <vector>

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

}  // namespace lockstep::compare
