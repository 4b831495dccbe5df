// printf-style text for one number, as the reports, notes and plot scripts write them.
#pragma once

#include <string>

namespace lockstep::util {

// snprintf(printf_format, x), e.g. ("%.2f", 3.14159) -> "3.14", ("%.4g", 1e-5) -> "1e-05".
// Non-finite values print as "NaN", "inf" or "-inf" whatever the format.
std::string format_number(const char* printf_format, double x);

// A count and its noun, singular for one: (1, "run") -> "1 run", (3, "run") -> "3 runs".
std::string count_of(long long n, const std::string& noun, const std::string& plural = "");

}  // namespace lockstep::util
