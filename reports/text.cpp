#include "reports/text.h"

#include <cmath>
#include <sstream>

#include "harness/util/format.h"

namespace lockstep::reports::text {

std::string fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "n/a";
  return util::format_number(("%." + std::to_string(decimals) + "f").c_str(), x);
}

std::string signed_fixed(double x, int decimals, const std::string& unit) {
  if (!std::isfinite(x)) return "n/a";
  return util::format_number(("%+." + std::to_string(decimals) + "f").c_str(), x) + unit;
}

std::string percent(std::optional<double> share) {
  if (!share) return "unknown";
  return std::isfinite(*share) ? fixed(100 * *share, 1) + "%" : "n/a";
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace lockstep::reports::text
