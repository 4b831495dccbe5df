// CLI11 validators with one-line messages a user can act on. CLI11's PositiveNumber says "Value 0
// not in range 0.000000 to 1.79769e+308" and calls a non-number "not in range"; these name the
// value and the rule. Each checks the text before CLI11 converts it.
#pragma once

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace lockstep::cli {

// An integer >= min (min 1: "a positive integer", min 0: "a non-negative integer").
inline CLI::Validator integer_at_least(long long min) {
  const std::string what = min == 1   ? "a positive integer"
                           : min == 0 ? "a non-negative integer"
                                      : "an integer >= " + std::to_string(min);
  return CLI::Validator(
      [min, what](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || end != s.c_str() + s.size()) return "'" + s + "' is not " + what;
        if (errno == ERANGE) return "'" + s + "' is out of range";
        if (v < min) return "'" + s + "' is not " + what;
        return std::string();
      },
      min == 1 ? "POSITIVE" : "INT>=" + std::to_string(min));
}

// A finite number > 0 (strict) or >= 0.
inline CLI::Validator number_above_zero(bool strict) {
  const std::string what = strict ? "a number > 0" : "a number >= 0";
  return CLI::Validator(
      [strict, what](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
          return "'" + s + "' is not a finite number";
        if (strict ? !(v > 0) : !(v >= 0)) return "'" + s + "' is not " + what;
        return std::string();
      },
      strict ? "NUMBER>0" : "NUMBER>=0");
}

// A positive integer or the word "auto" (`compare --repeats auto`).
inline CLI::Validator positive_integer_or_auto() {
  const CLI::Validator integer = integer_at_least(1);
  return CLI::Validator(
      [integer](std::string& s) -> std::string {
        if (s == "auto") return std::string();
        std::string copy = s;
        return integer(copy).empty() ? std::string()
                                     : "'" + s + "' is not a positive integer or auto";
      },
      "POSITIVE|auto");
}

inline CLI::Validator positive_integer() {
  return integer_at_least(1);
}
inline CLI::Validator non_negative_integer() {
  return integer_at_least(0);
}
inline CLI::Validator positive_number() {
  return number_above_zero(true);
}
inline CLI::Validator non_negative_number() {
  return number_above_zero(false);
}

}  // namespace lockstep::cli
