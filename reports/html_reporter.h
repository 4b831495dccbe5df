// report.html: one self-contained page (inline CSS and SVG, no scripts, no external URLs) with the
// verdict banner, config diff, alignment, performance, checks, policy and gnuplot plots. A plot
// gnuplot cannot draw becomes "plot unavailable: <reason>"; the page itself always renders.
#pragma once

#include "reports/reporter.h"

namespace lockstep::reports {

class HtmlReporter : public Reporter {
 public:
  std::string format() const override { return "html"; }
  std::string filename() const override { return "report.html"; }
  std::string render(const compare::CompareResult& r) const override;
};

}  // namespace lockstep::reports
