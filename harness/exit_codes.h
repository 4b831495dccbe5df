// The process exit codes are part of Lockstep's contract (README "Exit codes").
#pragma once

namespace lockstep {

constexpr int kExitPass = 0;        // the gate passed / the command succeeded
constexpr int kExitGateFailed = 1;  // a gate check failed (or a regression was flagged)
constexpr int kExitUsage = 2;       // bad command line or config
constexpr int kExitRunFailed = 3;   // a run crashed, went non-finite, hung or lost a rank

}  // namespace lockstep
