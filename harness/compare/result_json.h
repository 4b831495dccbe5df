// The JSON form of a comparison: report.json (written by reports/json_reporter.h) and what the
// history stores for every comparison (harness/history/store.h). The field names are a user
// contract, documented in docs/report-schema.md; fields in the documented order (verdict first);
// non-finite numbers are null.
#pragma once

#include <nlohmann/json.hpp>

#include "harness/vocab/compare_result.h"

namespace lockstep::compare {

nlohmann::ordered_json to_json(const CompareResult& r);

}  // namespace lockstep::compare
