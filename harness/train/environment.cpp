// Facts about the machine and build that make a measurement interpretable later.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <ATen/Version.h>

#include "harness/compat/torch_compat.h"
#include "harness/train/trainer.h"

namespace lockstep::train {
namespace {

std::string first_line_of(const char* cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd, "r")) {
    char buf[256];
    if (std::fgets(buf, sizeof buf, f)) out = buf;
    ::pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// Which BLAS this process really runs fp32 GEMMs on (Debian's alternatives decide at run time).
std::string blas_in_use() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    auto pos = line.find('/');
    if (pos == std::string::npos) continue;
    std::string path = line.substr(pos);
    if (path.find("openblas") != std::string::npos) return "OpenBLAS (" + path + ")";
    if (path.find("libblis") != std::string::npos) return "BLIS (" + path + ")";
    if (path.find("libmkl") != std::string::npos) return "MKL (" + path + ")";
    if (path.find("/blas/libblas") != std::string::npos)
      return "reference BLAS (slow: install libopenblas0-openmp) (" + path + ")";
  }
  return "unknown";
}

// The instruction set LibTorch's own CPU kernels run with (util::ensure_aten_cpu_capability), as
// LibTorch reports it ("CPU capability usage: AVX512" in 1.13 and 2.x).
std::string aten_cpu_capability() {
  const std::string config = at::show_config();
  const std::string key = "CPU capability usage: ";
  const auto pos = config.find(key);
  if (pos == std::string::npos) return "unknown";
  const auto end = config.find('\n', pos);
  return config.substr(pos + key.size(), end == std::string::npos ? end : end - pos - key.size());
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// The compiler this binary was built with (a golden file records it: harness/compare/golden_file.h).
std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

std::map<std::string, std::string> describe_environment(const std::string& device, int64_t threads,
                                                        int world) {
  std::map<std::string, std::string> env;
  env["libtorch"] = compat::torch_version();
  env["device"] = device;
  env["threads"] = std::to_string(threads);
  env["world_size"] = std::to_string(world);
  env["blas"] = blas_in_use();
  env["compiler"] = compiler();
  env["cpu"] = cpu_model();
  env["aten_cpu_capability"] = aten_cpu_capability();
  const char* tunables = std::getenv("GLIBC_TUNABLES");  // set by util::ensure_malloc_tuning
  env["malloc_tunables"] = tunables && *tunables ? tunables : "none";
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  env["host"] = host;
  const char* commit = std::getenv("LOCKSTEP_GIT_COMMIT");
  env["git_commit"] = commit ? commit : first_line_of("git rev-parse HEAD 2>/dev/null");
  if (env["git_commit"].empty()) env["git_commit"] = "unknown";
  const char* branch = std::getenv("LOCKSTEP_GIT_BRANCH");
  env["git_branch"] =
      branch ? branch : first_line_of("git rev-parse --abbrev-ref HEAD 2>/dev/null");
  return env;
}

}  // namespace lockstep::train
