// A plugin that misbehaves on purpose, for the loader's and the runner's error paths (tests only).
//   init: LOCKSTEP_TEST_PLUGIN_INIT = "throw" (init throws), "duplicate" (a name registered
//         twice), "builtin" (a built-in's name); unset: registers the entries below.
//   loss "throws_at_step_3": the third call throws (one call per step without grad_accum).
//   layer_norm "wrong_shape": returns one column too few.
#include <lockstep/plugin.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace {

torch::Tensor throws_at_step_3(const torch::Tensor& logits, const torch::Tensor& targets) {
  static int calls = 0;
  if (++calls == 3) throw std::runtime_error("deliberate failure in the loss kernel");
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), targets);
}

torch::Tensor wrong_shape(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                          double eps) {
  auto y = torch::layer_norm(x, {x.size(-1)}, w, b, eps);
  return y.narrow(-1, 0, x.size(-1) - 1);
}

}  // namespace

extern "C" void lockstep_plugin_init(lockstep::plugin::Registry& r) {
  using lockstep::plugin::Knob;
  const char* mode = std::getenv("LOCKSTEP_TEST_PLUGIN_INIT");
  const std::string m = mode ? mode : "";
  if (m == "throw") throw std::runtime_error("deliberate init failure");
  r.loss("throws_at_step_3", Knob::Exact, throws_at_step_3, "cross-entropy that throws at step 3");
  r.layer_norm("wrong_shape", Knob::Exact, wrong_shape, "LayerNorm one column short");
  if (m == "duplicate")
    r.layer_norm("wrong_shape", Knob::Exact, wrong_shape, "the same name again");
  if (m == "builtin")
    r.attention("math", Knob::Exact,
                [](const torch::Tensor& q, const torch::Tensor&, const torch::Tensor&) { return q; },
                "a built-in's name");
}
