// The built-in single-node launcher (`lockstep run --nproc K`), like torchrun's standalone mode:
// hosts the job's TCPStore, spawns K ranks of this binary on loopback with the standard
// environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), prefixes their output
// with the rank, and returns the worst exit code. A rank that dies is recorded in the store under
// "lost" so the survivors can name it; survivors still running after `grace_s` are killed, so no
// rank outlives the launcher (each also gets PR_SET_PDEATHSIG).
#pragma once

#include <string>
#include <vector>

namespace lockstep::dist {

struct LaunchSpec {
  std::string exe;                // this binary
  std::vector<std::string> args;  // argv[1..] for every rank
  int nproc = 1;
  double grace_s = 90;  // after the first rank fails, how long the others may take
};

int launch(const LaunchSpec& spec);

}  // namespace lockstep::dist
