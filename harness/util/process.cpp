#include "harness/util/process.h"

#include <unistd.h>

namespace lockstep::util {

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("lockstep");
}

}  // namespace lockstep::util
