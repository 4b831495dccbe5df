// Who am I in the job: rank, world size, local rank and the store address, read from the
// standard launcher environments (torchrun / Lockstep's launcher, Slurm, OpenMPI). Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace lockstep::dist {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  bool agent_store = false;        // the launcher hosts the TCPStore (all ranks connect as clients)
  std::string source = "default";  // "torchrun", "slurm", "openmpi" or "default"
};

// Reads the environment through `getenv` (injectable for tests). Precedence: RANK/WORLD_SIZE,
// then SLURM_PROCID/SLURM_NTASKS, then OMPI_COMM_WORLD_RANK/SIZE; MASTER_ADDR/MASTER_PORT apply to
// all. Throws std::runtime_error on malformed or inconsistent values (naming the variable).
RankInfo rank_info_from_env(const std::function<const char*(const char*)>& getenv_fn);
RankInfo rank_info_from_env();

// The CUDA device of a rank: device `local_rank`, one GPU per rank. A local rank with no device of
// its own (more ranks on this machine than `device_count`) gets none, with the reason in `why`:
// ranks never share a GPU silently (NCCL refuses two ranks on one device, and timings would mix).
std::optional<int> cuda_device_for(int local_rank, int device_count, std::string* why);

}  // namespace lockstep::dist
