// What `lockstep bisect` prints: every trial with its verdict, the failed checks and its report,
// then the culprit(s) or the knob whose addition first fails the cumulative run.
#pragma once

#include "harness/compare/bisect.h"
#include "reports/reporter_for.h"

namespace lockstep::reports {

class BisectConsoleReporter : public ReporterFor<compare::BisectResult> {
 public:
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const compare::BisectResult& r) const override;
};

}  // namespace lockstep::reports
