// The stage split on the terminal: the measured units, the optimal and the naive split stage by
// stage, and the bubble model.
#include <cstdio>
#include <sstream>
#include <utility>

#include "harness/util/format.h"
#include "reports/diagnose/reporters.h"

namespace lockstep::reports {

std::string StagesConsoleReporter::render(const diagnose::StagePlan& p) const {
  const diagnose::LayerCosts& c = p.costs;
  std::ostringstream o;
  double total = 0;
  for (const auto& u : c.units) total += (u.forward_ms + u.backward_ms);
  o << "lockstep stages: " << c.blocks() << " blocks into " << p.stages << " pipeline stages, "
    << p.microbatches << " micro-batches (GPipe); measured cost "
    << util::format_number("%.2f", total) << " ms/step (forward + backward)";
  if (c.steps > 0) o << " over " << c.steps << " steps";
  std::string units;
  for (const auto& u : c.units)
    units += (units.empty() ? "" : "; ") + u.name + " " +
             util::format_number("%.2f", (u.forward_ms + u.backward_ms));
  o << "\n  units (ms): " << units << "\n";
  for (auto [name, s] : {std::pair<const char*, const diagnose::Split*>{"optimal", &p.optimal},
                         {"naive", &p.naive}}) {
    o << "\n"
      << name << " split: slowest stage " << util::format_number("%.2f", s->max_ms)
      << " ms, imbalance " << util::format_number("%.1f", s->imbalance_pct) << "%, pipeline step "
      << util::format_number("%.2f", s->step_ms) << " ms (bubble "
      << util::format_number("%.2f", s->bubble_ms)
      << " ms = " << util::format_number("%.1f", 100 * s->bubble_share)
      << "% of the step; efficiency " << util::format_number("%.1f", 100 * s->efficiency) << "%)\n";
    for (size_t i = 0; i < s->stages.size(); ++i) {
      const auto& st = s->stages[i];
      char line[200];
      std::snprintf(line, sizeof line, "  stage %zu  %-36s fwd %8.2f  bwd %8.2f  total %8.2f ms\n",
                    i, st.units().c_str(), st.forward_ms, st.backward_ms, st.ms());
      o << line;
    }
  }
  o << "\noptimal vs naive: pipeline step " << util::format_number("%.2f", p.optimal.step_ms)
    << " vs " << util::format_number("%.2f", p.naive.step_ms) << " ms ("
    << util::format_number("%.2fx", p.speedup) << ")\n"
    << "bubble model: step = (m + P - 1) * slowest / m; bubble share = (P - 1) / (m + P - 1)\n";
  return o.str();
}

}  // namespace lockstep::reports
