// The process exit codes are part of Lockstep's contract (README "Exit codes").
#pragma once

#include <stdexcept>

namespace lockstep {

constexpr int kExitPass = 0;        // the gate passed / the command succeeded
constexpr int kExitGateFailed = 1;  // a gate check failed (or a regression was flagged)
constexpr int kExitUsage = 2;       // bad command line or config
constexpr int kExitRunFailed = 3;   // a run crashed, went non-finite, hung or lost a rank

// Bad input that is not a config file (a golden file, a run folder): exit code 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace lockstep
