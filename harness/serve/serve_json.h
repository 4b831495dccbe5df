// Serving results as JSON (issue 37): `lockstep serve --json`, `serve-capacity --json` and the
// report.json of `compare` on two serving configs (docs/report-schema.md "Serving").
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "harness/serve/figures.h"
#include "harness/serve/verdict.h"

namespace lockstep::serve {

nlohmann::ordered_json to_json(const Figures& f);
nlohmann::ordered_json to_json(const TailOrigin& t);
nlohmann::ordered_json to_json(const ServeCheck& c);
nlohmann::ordered_json load_json(const ServeConfig& cfg);
// A number, or null when it is not finite (an unserved tail's inf).
nlohmann::ordered_json finite_or_null(double x);

}  // namespace lockstep::serve
