// report.json: the comparison as machine-readable data. The field names are a user contract,
// documented in docs/report-schema.md. Non-finite numbers are written as null.
#pragma once

#include <nlohmann/json.hpp>

#include "reports/reporter.h"

namespace lockstep::reports {

class JsonReporter : public Reporter {
 public:
  std::string format() const override { return "json"; }
  std::string filename() const override { return "report.json"; }
  std::string render(const compare::CompareResult& r) const override;  // to_json(r), indented
};

// Fields in the documented order (verdict first).
nlohmann::ordered_json to_json(const compare::CompareResult& r);

}  // namespace lockstep::reports
