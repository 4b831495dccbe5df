// A deliberately wrong attention kernel, the gate's negative control, declared Knob::Exact: the
// causal mask is off by one, so each query also sees the next key (the classic off-by-one of a
// blocked causal mask). The model still trains and its loss falls faster than it should (it can
// read the token it is asked to predict): only the loss alignment catches it.
//
// Subtler attention bugs do not reach the gate's tolerance on the reference workload, whose
// synthetic data is a first-order Markov chain (the next token depends on the current one only,
// so attention matters little): a softmax scale 2% too large moved the tiny preset's loss by at
// most 5e-5 in 200 steps, half the scale by 1.4e-3 at most and 5e-5 at step 200, against the exact
// tolerance of 5e-4 (bench/RESULTS.md). Gate attention kernels on data that needs attention.
#include <lockstep/plugin.h>

#include <cmath>
#include <limits>

// The plugin's helpers, in a namespace of its own: internal to this file, and distinct from every
// other plugin's (tools/check-torch2-api.sh compiles all the example plugins in one unit).
namespace buggy_attention_plugin {
namespace {

torch::Tensor sees_next_token(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v) {
  const int64_t T = q.size(2), hd = q.size(3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // The bug: triu(2) masks from two above the diagonal on, where triu(1) is the causal mask.
  auto mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(), q.options()).triu(2);
  auto att = torch::matmul(q, k.transpose(-2, -1)) * scale + mask;  // (B, H, T, T)
  return torch::matmul(torch::softmax(att, -1), v);                 // (B, H, T, hd)
}

}  // namespace
}  // namespace buggy_attention_plugin

extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r) {
  using namespace buggy_attention_plugin;
  r.attention("sees_next_token", lockstep::plugin::Knob::Exact, sees_next_token,
              "math attention whose causal mask is off by one (a deliberate bug, for tests)");
}
