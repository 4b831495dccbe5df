#include "harness/calibrate.h"

#include <chrono>

#include "harness/compat/torch_compat.h"
#include "variants/precision.h"

namespace lockstep {

GemmPeak measure_gemm_peak(variants::Compute dtype, int threads, double seconds) {
  at::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  // The GEMM runs in the precision's autocast dtype (fp32 when it has none).
  const auto& t = variants::traits(dtype);
  const auto st = variants::scalar_type(t.autocast.value_or(variants::Dtype::F32));
  GemmPeak best{dtype, threads, 0, 0};
  for (int n : {512, 1024, 2048}) {
    auto a = torch::randn({n, n}).to(st), b = torch::randn({n, n}).to(st),
         c = torch::empty({n, n}, st);
    torch::mm_out(c, a, b);  // warm up (oneDNN primitive creation, page faults)
    int iters = 0;
    auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      torch::mm_out(c, a, b);
      ++iters;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double flops = 2.0 * n * n * static_cast<double>(n) * iters / elapsed;
    if (flops > best.flops) best.flops = flops, best.best_n = n;
  }
  return best;
}

const char* libtorch_version() {
  return compat::torch_version();
}

}  // namespace lockstep
