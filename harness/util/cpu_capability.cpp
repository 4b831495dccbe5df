#include "harness/util/cpu_capability.h"

#include <cstdlib>

namespace lockstep::util {

std::string aten_cpu_capability_to_set(const char* current, bool has_avx512_bf16) {
  if (current && *current) return "";  // the user's choice
  return has_avx512_bf16 ? "avx512" : "";
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

void ensure_aten_cpu_capability() {
  const std::string value =
      aten_cpu_capability_to_set(std::getenv("ATEN_CPU_CAPABILITY"), cpu_has_avx512_bf16());
  if (!value.empty()) ::setenv("ATEN_CPU_CAPABILITY", value.c_str(), 1);
}

}  // namespace lockstep::util
