#include "harness/dist/rendezvous.h"

#include <cstdlib>
#include <stdexcept>

namespace lockstep::dist {
namespace {

std::optional<int> int_var(const std::function<const char*(const char*)>& env, const char* name) {
  const char* v = env(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1000000)
    throw std::runtime_error(std::string("environment ") + name + "=\"" + v +
                             "\": expected a non-negative integer");
  return static_cast<int>(x);
}

}  // namespace

RankInfo rank_info_from_env(const std::function<const char*(const char*)>& env) {
  RankInfo r;
  struct Scheme {
    const char *rank, *world, *local, *name;
  };
  const Scheme schemes[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "slurm"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "openmpi"},
  };
  for (const auto& s : schemes) {
    auto rank = int_var(env, s.rank);
    auto world = int_var(env, s.world);
    if (!rank && !world) continue;
    if (!rank || !world)
      throw std::runtime_error(std::string("environment: ") + (rank ? s.world : s.rank) +
                               " is missing (" + (rank ? s.rank : s.world) + " is set)");
    if (*world < 1 || *rank >= *world)
      throw std::runtime_error(std::string("environment: ") + s.rank + "=" + std::to_string(*rank) +
                               " is not below " + s.world + "=" + std::to_string(*world));
    r.rank = *rank;
    r.world_size = *world;
    r.local_rank = int_var(env, s.local).value_or(*rank);
    r.source = s.name;
    break;
  }
  if (const char* a = env("MASTER_ADDR"); a && *a) r.master_addr = a;
  if (auto p = int_var(env, "MASTER_PORT")) {
    if (*p < 1 || *p > 65535)
      throw std::runtime_error("environment MASTER_PORT: not a port number");
    r.master_port = *p;
  }
  auto truthy = [&](const char* name) {
    const char* v = env(name);
    return v && (std::string(v) == "1" || std::string(v) == "True" || std::string(v) == "true");
  };
  r.agent_store = truthy("TORCHELASTIC_USE_AGENT_STORE") || truthy("LOCKSTEP_AGENT_STORE");
  return r;
}

std::optional<int> cuda_device_for(int local_rank, int device_count, std::string* why) {
  if (device_count < 1) {
    if (why) *why = "this machine has no CUDA device";
    return std::nullopt;
  }
  if (local_rank < device_count) return local_rank;
  if (why)
    *why = "local rank " + std::to_string(local_rank) +
           " has no GPU of its own: this machine has " + std::to_string(device_count) +
           " CUDA device(s); run at most " + std::to_string(device_count) + " rank(s) per machine";
  return std::nullopt;
}

RankInfo rank_info_from_env() {
  return rank_info_from_env([](const char* n) { return std::getenv(n); });
}

}  // namespace lockstep::dist
