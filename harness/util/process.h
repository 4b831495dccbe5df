// Small process helpers (torch-free).
#pragma once

#include <string>

namespace lockstep::util {

// Absolute path of the running executable (commands that spawn arms re-run it).
std::string self_exe();

}  // namespace lockstep::util
