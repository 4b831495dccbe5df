#include "reports/json_reporter.h"

#include "harness/compare/result_json.h"

namespace lockstep::reports {

std::string JsonReporter::render(const compare::CompareResult& r) const {
  // Invalid UTF-8 in a config value or failure line must not make the report unwritable.
  return compare::to_json(r).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
         "\n";
}

}  // namespace lockstep::reports
