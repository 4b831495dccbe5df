// The verdict table `lockstep compare` prints to the terminal: banner, changed keys, warnings,
// alignment, performance with deltas, memory, checks and the policy applied.
#pragma once

#include "reports/reporter.h"

namespace lockstep::reports {

class ConsoleReporter : public Reporter {
 public:
  // unicode=false: ASCII only ("[ok]"/"[FAIL]" instead of the check marks), for dumb terminals.
  explicit ConsoleReporter(bool unicode = true) : unicode_(unicode) {}
  std::string format() const override { return "console"; }
  std::string filename() const override { return ""; }
  std::string render(const compare::CompareResult& r) const override;

 private:
  bool unicode_;
};

}  // namespace lockstep::reports
