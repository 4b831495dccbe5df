#include "harness/conformance/cases.h"

#include <cmath>
#include <cstdio>

namespace lockstep::conformance {
namespace {

const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);

torch::Tensor randn(std::vector<int64_t> shape, double scale = 1.0) {
  return torch::randn(shape, f64) * scale;
}

std::string attn_shape(int64_t B, int64_t H, int64_t T, int64_t hd) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "B %lld, H %lld, T %lld, hd %lld", static_cast<long long>(B),
                static_cast<long long>(H), static_cast<long long>(T), static_cast<long long>(hd));
  return buf;
}

std::string rows_shape(const char* what, int64_t n, int64_t c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "N %lld, %s %lld", static_cast<long long>(n), what,
                static_cast<long long>(c));
  return buf;
}

}  // namespace

std::vector<Case> attention_cases(const workloads::ModelConfig& m) {
  const int64_t B = 2, H = m.n_heads, hd = m.head_dim(), T = m.seq_len;
  std::vector<Case> out;
  auto add = [&](std::string name, int64_t t, torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    out.push_back({std::move(name), attn_shape(B, H, t, hd), {q, k, v}});
  };
  auto n = [&](int64_t t, double s = 1.0) { return randn({B, H, t, hd}, s); };
  add("model_shape", T, n(T), n(T), n(T));                 // logits ~ N(0, 1)
  add("peaked_softmax", T, n(T, 3.0), n(T, 3.0), n(T));    // logits ~ N(0, 81): near one-hot
  add("flat_softmax", T, torch::zeros({B, H, T, hd}, f64), n(T), n(T));  // uniform weights
  {  // key 0 scores ~ 440 for every query: exp overflows unless the row max is subtracted
    auto q = n(T).abs() + 0.5;
    auto k = n(T, 0.1);
    k.select(2, 0).fill_(60.0);
    add("one_huge_logit", T, q, k, n(T));
    out.back().gradient_not_judged = {"q", "k"};  // a saturated softmax: zero by definition
  }
  add("t1", 1, n(1), n(1), n(1));
  out.back().gradient_not_judged = {"q", "k"};  // softmax of one element: constant
  add("t67", 67, n(67), n(67), n(67));  // a prime: no multiple of any block size
  {  // 4x the model's rows, diffuse and offset: a low-precision softmax sum or P.V drifts
    const int64_t L = 4 * T;
    add("long_rows", L, n(L, 0.5), n(L, 0.5), n(L) + 4.0);
  }
  add("huge_values", T, n(T), n(T), n(T, 1e30));  // v near the range's top (fp32 and bf16 alike)
  add("zeros", T, torch::zeros({B, H, T, hd}, f64), torch::zeros({B, H, T, hd}, f64),
      torch::zeros({B, H, T, hd}, f64));
  return out;
}

std::vector<Case> activation_cases(const workloads::ModelConfig& m) {
  const int64_t C = m.d_model, N = 2 * m.seq_len;
  std::vector<Case> out;
  auto add = [&](std::string name, int64_t n, double spread) {  // pre-activation ~ N(0, spread^2)
    out.push_back({std::move(name), rows_shape("C", n, C),
                   {randn({n, C}), randn({4 * C, C}, spread / std::sqrt(static_cast<double>(C))),
                    randn({4 * C}, 0.1)}});
  };
  add("model_shape", N, 1.0);
  add("wide_preactivation", N, 5.0);  // GELU's tails and the curve between
  add("rows67", 67, 1.0);
  out.push_back({"zeros", rows_shape("C", N, C),
                 {torch::zeros({N, C}, f64), randn({4 * C, C}, 0.1), torch::zeros({4 * C}, f64)}});
  return out;
}

std::vector<Case> layer_norm_cases(const workloads::ModelConfig& m) {
  const int64_t C = m.d_model, N = 2 * m.seq_len;
  std::vector<Case> out;
  auto add = [&](std::string name, int64_t n, torch::Tensor x) {
    out.push_back({std::move(name), rows_shape("C", n, C), {x, randn({C}, 0.5) + 1.0, randn({C}, 0.1)}});
  };
  add("model_shape", N, randn({N, C}, 3.0) + 1.0);
  add("large_offset", N, randn({N, C}) + 1e4);   // E[x^2] - E[x]^2 cancels catastrophically
  add("tiny_variance", N, randn({N, C}, 1e-3) + 1.0);
  add("constant_rows", N, torch::full({N, C}, 2.5, f64));  // variance 0: eps alone
  add("rows67", 67, randn({67, C}));
  return out;
}

std::vector<Case> loss_cases(const workloads::ModelConfig& m) {
  const int64_t V = m.vocab_size, N = 2 * m.seq_len;
  std::vector<Case> out;
  auto targets = [](int64_t n, int64_t v) {
    return torch::randint(v, {n}, torch::TensorOptions().dtype(torch::kInt64));
  };
  auto add = [&](std::string name, int64_t n, int64_t v, torch::Tensor logits) {
    out.push_back({std::move(name), rows_shape("V", n, v), {logits, targets(n, v)}});
  };
  add("model_shape", N, V, randn({N, V}, 2.0));
  add("peaked", N, V, randn({N, V}, 30.0));
  add("large_offset", N, V, randn({N, V}) + 1e4);  // exp overflows without the row max
  add("v_odd", N, V + 5, randn({N, V + 5}));
  return out;
}

std::vector<OptimizerCase> optimizer_cases() {
  std::vector<OptimizerCase> out;
  for (int64_t n : {int64_t{1027}, int64_t{65536 + 3}}) {
    OptimizerCase c;
    c.name = n < 2000 ? "steps5_small" : "steps5_large";
    c.shape = "numel " + std::to_string(n) + ", 5 steps";
    c.param = randn({n}).to(torch::kFloat32).to(torch::kFloat64);
    c.decay_mask = (torch::rand({n}, f64) < 0.5).to(torch::kFloat64);
    for (int s = 0; s < 5; ++s) c.grads.push_back(randn({n}, 0.1).to(torch::kFloat32).to(torch::kFloat64));
    c.hyper.lr = 1e-2;
    c.hyper.beta1 = 0.9;
    c.hyper.beta2 = 0.95;
    c.hyper.eps = 1e-8;
    c.hyper.weight_decay = 0.1;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace lockstep::conformance
