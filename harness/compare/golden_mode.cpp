#include "harness/compare/golden_mode.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/workload_change.h"
#include "harness/util/exit_codes.h"

namespace lockstep::compare {

std::vector<double> read_golden(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open golden file");
  std::vector<double> curve;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    long long step = 0;
    double loss = 0;
    if (!(ss >> step >> loss) || step != static_cast<long long>(curve.size()) + 1)
      throw UsageError(path + ":" + std::to_string(n) + ": expected \"" +
                       std::to_string(curve.size() + 1) + " <loss>\"");
    curve.push_back(loss);
  }
  if (curve.empty()) throw UsageError(path + ": no losses");
  return curve;
}

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

}  // namespace lockstep::compare
