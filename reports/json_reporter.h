// report.json: the comparison as machine-readable data, its JSON form
// (harness/compare/result_json.h) indented. The field names are a user contract, documented in
// docs/report-schema.md. Non-finite numbers are written as null.
#pragma once

#include "reports/reporter.h"

namespace lockstep::reports {

class JsonReporter : public Reporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return "report.json"; }
  std::string render(const compare::CompareResult& r) const override;
};

}  // namespace lockstep::reports
