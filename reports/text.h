// Wording every human-readable report shares, so console, Markdown and HTML agree. Numbers go
// through the one number formatter (util::format_number); here only what a report prints for a
// value it cannot show.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace lockstep::reports::text {

std::string fixed(double x, int decimals);                                  // "n/a" when non-finite
std::string signed_fixed(double x, int decimals, const std::string& unit);  // "+9.0%"
std::string percent(std::optional<double> share);  // MFU-style 0..1 share: "31.2%", or "unknown"
std::vector<std::string> lines(const std::string& s);  // split on '\n', no empties

}  // namespace lockstep::reports::text
