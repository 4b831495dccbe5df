#include "harness/util/malloc_tuning.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>

namespace lockstep::util {
namespace {

// name, value. 32 MiB is the largest mmap threshold glibc accepts on 64-bit (HEAP_MAX_SIZE / 2).
const std::pair<const char*, const char*> kTunables[] = {
    {"glibc.malloc.hugetlb", "1"},
    {"glibc.malloc.mmap_threshold", "33554432"},
    {"glibc.malloc.trim_threshold", "1099511627776"},  // 1 TiB: never trims in practice
};

bool sets(const std::string& tunables, const std::string& name) {
  size_t pos = 0;
  while ((pos = tunables.find(name + "=", pos)) != std::string::npos) {
    if (pos == 0 || tunables[pos - 1] == ':') return true;
    ++pos;
  }
  return false;
}

}  // namespace

std::string with_malloc_tunables(const std::string& current) {
  std::string out = current;
  for (const auto& [name, value] : kTunables) {
    if (sets(current, name)) continue;
    out += (out.empty() ? "" : ":") + std::string(name) + "=" + value;
  }
  return out;
}

bool malloc_tuning_disabled() {
  return std::getenv("LOCKSTEP_NO_MALLOC_TUNING") || std::getenv("LOCKSTEP_NO_HUGEPAGES");
}

void ensure_malloc_tuning(char** argv) {
  if (malloc_tuning_disabled()) return;
  const char* env = std::getenv("GLIBC_TUNABLES");
  const std::string current = env ? env : "";
  const std::string wanted = with_malloc_tunables(current);
  if (wanted == current) return;
  ::setenv("GLIBC_TUNABLES", wanted.c_str(), 1);
  ::execv("/proc/self/exe", argv);  // only returns on failure: carry on without
}

}  // namespace lockstep::util
