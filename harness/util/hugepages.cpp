#include "harness/util/hugepages.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace lockstep::util {

void ensure_malloc_hugepages(char** argv) {
  if (std::getenv("LOCKSTEP_NO_HUGEPAGES")) return;
  const char* current = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = current ? current : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return;
  const std::string value = (tunables.empty() ? "" : tunables + ":") + "glibc.malloc.hugetlb=1";
  ::setenv("GLIBC_TUNABLES", value.c_str(), 1);
  ::execv("/proc/self/exe", argv);  // only returns on failure: carry on without
}

}  // namespace lockstep::util
