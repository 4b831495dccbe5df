// In-process numerics tests of the LibTorch part (llm.c's test_gpt2 is the model): the model, the
// attention kernels, bf16 autocast, ZeRO sharding and checkpoints, checked in one process against
// each other and against reference values made by an independent implementation.
//
//   * fused vs math attention: outputs and the gradients of q, k, v, per dtype;
//   * the model's logits, loss, every parameter's gradient and the weights after one AdamW step
//     against tests/data/gpt_reference.pt, which tests/data/gpt_reference.py (the same GPT written
//     again in Python with plain tensor ops, in float64) wrote from the same weights;
//   * ZeRO stages 1, 2, 3 vs stage 0 on 2 real Gloo ranks: every parameter's gradient and value
//     after each of 3 steps of 2 micro-batches;
//   * bf16 autocast forward vs fp32, within bf16's tolerance;
//   * checkpoint save -> load -> the next step bitwise equal (1 rank, and 2 ranks under ZeRO-3);
//   * the function probe's CountSketch: distances between sketches are distances between tensors.
//
// The pieces are the project's own (GPT, the registry's kernels, Precision, Comm, Sharding, AdamW,
// save/load_checkpoint), put together the way Trainer::run_steps does.
//
// The two ranks are two threads of this process, each with its own c10d Gloo process group over
// loopback (a real TCPStore, real sockets). Threads, not forked processes: a fork after LibTorch
// has started its thread pools is not safe, and one process keeps the test in one place. Nothing
// in the ranks' step touches process-wide state (autocast and grad mode are per thread; the
// weights are copied in, so the global RNG never decides them).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include "harness/config/config.h"
#include "harness/dist/comm.h"
#include "harness/train/checkpoint.h"
#include "harness/train/faults/faults.h"
#include "harness/kernels/install.h"
#include "harness/kernels/registry.h"
#include "harness/vocab/optim_config.h"
#include "harness/train/probe/probe.h"
#include "variants/adamw.h"
#include "variants/attention.h"
#include "variants/precision.h"
#include "variants/sharding.h"
#include "workloads/gpt.h"

namespace {

namespace fs = std::filesystem;
using namespace lockstep;
using ParallelConfig = dist::ParallelConfig;

// The trainer's optimizer update for the sharding layer: AdamW with `o`'s hyperparameters.
variants::ShardUpdate adamw(const train::OptimConfig& o) {
  return [o](torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
             const torch::Tensor& decay, double lr, int64_t t) {
    variants::adamw_update(p, g, m, v, decay,
                           plugin::AdamWStep{lr, t, o.beta1, o.beta2, o.eps, o.weight_decay});
  };
}

// ---- tolerances ---------------------------------------------------------------------------------
// Every comparison is the relative max-norm error  max|a - b| / max|b|  of one tensor. Per dtype:
//   fp64  1e-12: two float64 implementations of the same formula differ by rounding (measured
//         8e-16); a different formula (LayerNorm's eps 1e-6 instead of 1e-5, tanh-GELU) is off
//         by 1e-6 or more.
//   fp32  2e-5: float32 rounding (6e-8) over dot products of 32-128 terms and two blocks
//         (measured 6e-7); a gradient off by 0.1% (1e-3) fails by 50x.
//   bf16  2e-2: bf16 keeps 8 bits (2^-8 = 3.9e-3 per rounding); autocast rounds the inputs of
//         every GEMM, five per block, over two blocks (measured 3.7e-3 on the logits, 6.7e-3 on
//         bf16 attention's dq).
// Each test prints the worst error it measured per check ([numerics] lines, ctest -V).
constexpr double kTolFp64 = 1e-12;
constexpr double kTolFp32 = 2e-5;
constexpr double kTolBf16 = 2e-2;

double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  auto x = a.detach().to(torch::kFloat64), y = b.detach().to(torch::kFloat64);
  EXPECT_EQ(x.sizes(), y.sizes());
  const double scale = y.abs().max().item<double>();
  return (x - y).abs().max().item<double>() / (scale > 0 ? scale : 1.0);
}

// The worst error seen per check, printed at the end of a test (ctest -V shows it): the measured
// margins behind the tolerances above.
class Worst {
 public:
  ~Worst() {
    for (const auto& [what, e] : worst_)
      std::printf("[numerics] %-48s worst %.3g (tolerance %.3g)\n", what.c_str(), e.first,
                  e.second);
  }
  // EXPECTs rel_err(a, b) <= tol and records it under `what`.
  double operator()(const std::string& what, const torch::Tensor& a, const torch::Tensor& b,
                    double tol, const std::string& detail = "") {
    const double e = rel_err(a, b);
    EXPECT_LE(e, tol) << what << " " << detail;
    auto& w = worst_[what];
    w = {std::max(w.first, e), tol};
    return e;
  }

 private:
  std::map<std::string, std::pair<double, double>> worst_;
};

std::string source_path(const std::string& rel) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/" + rel;
}

// ---- the reference file -------------------------------------------------------------------------

class Reference {
 public:
  Reference() {
    const std::string path = source_path("tests/data/gpt_reference.pt");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open (see tests/data/gpt_reference.py)");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& e : torch::pickle_load(bytes).toGenericDict())
      t_[e.key().toStringRef()] = e.value().toTensor();
  }
  const torch::Tensor& at(const std::string& key) const {
    auto it = t_.find(key);
    if (it == t_.end()) throw std::runtime_error("gpt_reference.pt has no " + key);
    return it->second;
  }
  double hp(const std::string& key) const { return at("hp." + key).item<double>(); }
  std::vector<std::string> with_prefix(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& [k, v] : t_)
      if (k.rfind(prefix, 0) == 0) out.push_back(k.substr(prefix.size()));
    return out;
  }

 private:
  std::map<std::string, torch::Tensor> t_;
};

const Reference& reference() {
  static const Reference r;
  return r;
}

std::string toml_number(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// The baseline config at the reference's shape and AdamW settings, plus `extra` overrides.
config::Config micro_config(std::vector<std::string> extra = {}) {
  const auto& r = reference();
  std::vector<std::string> sets{
      "model.d_model=" + std::to_string(static_cast<int64_t>(r.hp("d_model"))),
      "model.n_layers=" + std::to_string(static_cast<int64_t>(r.hp("n_layers"))),
      "model.n_heads=" + std::to_string(static_cast<int64_t>(r.hp("n_heads"))),
      "model.seq_len=" + std::to_string(static_cast<int64_t>(r.hp("seq_len"))),
      "model.vocab_size=" + std::to_string(static_cast<int64_t>(r.hp("vocab_size"))),
      "optim.lr=" + toml_number(r.hp("lr")),
      "optim.min_lr=" + toml_number(r.hp("lr") / 10),
      "optim.beta1=" + toml_number(r.hp("beta1")),
      "optim.beta2=" + toml_number(r.hp("beta2")),
      "optim.eps=" + toml_number(r.hp("eps")),
      "optim.weight_decay=" + toml_number(r.hp("weight_decay")),
      "optim.warmup=0",
#if defined(LOCKSTEP_NO_GLOO)
      "parallel.backend=\"auto\"",  // no Gloo in this build: one rank has no group (2 ranks skip)
#else
      "parallel.backend=\"gloo\"",
#endif
      "parallel.bucket_mb=0.01",  // ~2,600 floats: several buckets per unit
      "parallel.timeout_s=60.0",
  };
  sets.insert(sets.end(), extra.begin(), extra.end());
  return config::Config::load(source_path("configs/baseline.toml"), sets);
}

// The model's kernels as the registry resolves them for `cfg`, with attention `impl`.
workloads::ModelKernels model_kernels(const config::Config& cfg, const std::string& impl) {
  const auto k = registry::kernels_for(cfg);
  return {registry::attention_kernel(impl), k.activation, k.layer_norm};
}

workloads::GPT build_model(const config::Config& cfg, const std::string& impl,
                           torch::Dtype dtype = torch::kFloat32) {
  workloads::GPT model(workloads::ModelConfig::from(cfg), model_kernels(cfg, impl));
  model->to(dtype);
  // The reference's weights, by parameter name (every parameter must have one).
  torch::NoGradGuard no_grad;
  size_t n = 0;
  for (auto& p : model->named_parameters()) {
    p.value().copy_(reference().at("weight." + p.key()));
    ++n;
  }
  EXPECT_EQ(n, reference().with_prefix("weight.").size());
  return model;
}

// Parameter names in Sharding's order (GPT::unit_parameters(): wte, wpe, ln_f, then the blocks).
std::vector<std::string> unit_order_names(workloads::GPT model) {
  std::vector<std::string> out;
  for (const auto& unit : model->unit_parameters())
    for (const auto& t : unit)
      for (const auto& p : model->named_parameters())
        if (p.value().unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) out.push_back(p.key());
  return out;
}

dist::RankInfo one_rank() {
  return dist::RankInfo{};
}

// (B, T, V) logits -> mean cross-entropy, as the trainer computes it.
torch::Tensor cross_entropy(const torch::Tensor& logits, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                              y.reshape({-1}));
}

// One optimizer step as Trainer::run_steps takes it: micro-batches forward and backward, the
// sharded reduction, the global grad norm, clipping, AdamW. xs/ys: one (b, T) batch per micro-step.
double train_step(workloads::GPT& model, variants::Sharding& sh, const train::OptimConfig& optim,
                  const std::vector<torch::Tensor>& xs, const std::vector<torch::Tensor>& ys,
                  double lr, int64_t t) {
  const auto A = static_cast<int64_t>(xs.size());
  sh.begin_step();
  double loss_sum = 0;
  for (int64_t micro = 0; micro < A; ++micro) {
    auto loss = cross_entropy(model->forward(xs[static_cast<size_t>(micro)]),
                              ys[static_cast<size_t>(micro)]);
    (loss / static_cast<double>(A)).backward();
    sh.end_backward(micro == A - 1);
    loss_sum += loss.item<double>();
  }
  double norm_sq = 0;
  for (double v : sh.unit_grad_norms_sq()) norm_sq += v;
  const double norm = std::sqrt(norm_sq);
  if (optim.clip_grad_norm > 0 && norm > optim.clip_grad_norm)
    sh.scale_grads(optim.clip_grad_norm / (norm + 1e-6));
  sh.step(lr, t);
  return loss_sum / static_cast<double>(A);
}

// A loopback port nobody listens on right now.
int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free loopback port");
  ::close(s);
  return ntohs(a.sin_port);
}

// A build without Gloo (the wheel build: CMakeLists.txt "Gloo") has no CPU process group: the tests
// on 2 Gloo ranks skip there, saying why (they run in the Debian build).
#if defined(LOCKSTEP_NO_GLOO)
#define SKIP_WITHOUT_GLOO() \
  GTEST_SKIP() << "needs Gloo: this build's LibTorch ships no Gloo headers (runs in the Debian build)"
#else
#define SKIP_WITHOUT_GLOO() (void)0
#endif

// Runs body(rank, comm) on 2 ranks: two threads, one Gloo process group each. Rethrows the first
// rank's exception after both finish (a failing rank fails its peer's next collective within
// parallel.timeout_s).
template <typename Body>
void on_two_ranks(const ParallelConfig& par, Body body) {
  const int port = free_port();
  std::vector<std::exception_ptr> errors(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      try {
        dist::RankInfo who;
        who.rank = r;
        who.local_rank = r;
        who.world_size = 2;
        who.master_port = port;
        dist::Comm comm(who, par, torch::kCPU);
        body(r, comm);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  for (auto& t : ranks) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Deterministic token batches: batch(step, micro, rank) of `rows` sequences (inputs, targets).
struct Batches {
  int64_t rows, T, V;
  std::pair<torch::Tensor, torch::Tensor> at(int64_t step, int64_t micro, int64_t rank) const {
    auto gen =
        at::detail::createCPUGenerator(static_cast<uint64_t>(1000003 * step + 1009 * micro + rank));
    auto seq = at::randint(V, {rows, T + 1}, gen, torch::TensorOptions().dtype(torch::kInt64));
    return {seq.narrow(1, 0, T), seq.narrow(1, 1, T)};  // (rows, T) each
  }
};

class Numerics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { registry::install(); }  // the built-in kernels, as the binary
  void SetUp() override {
    at::set_num_threads(1);  // as the runs (configs/baseline.toml: run.threads = 1)
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/false);
  }
};

// ---- attention: fused vs math -------------------------------------------------------------------

TEST_F(Numerics, FusedAttentionMatchesMathInOutputsAndGradients) {
  const workloads::AttentionKernel math = registry::attention_kernel("math"),
                                   fused = registry::attention_kernel("fused");
  Worst worst;
  struct Case {
    torch::Dtype dtype;
    double tol;
  };
  // bf16 attention in isolation: one rounding of scores, probabilities and output (2^-8 each).
  for (const auto& c : {Case{torch::kFloat64, kTolFp64}, Case{torch::kFloat32, kTolFp32},
                        Case{torch::kBFloat16, kTolBf16}}) {
    SCOPED_TRACE(std::string("dtype ") + c10::toString(c.dtype));
    auto gen = at::detail::createCPUGenerator(42);
    auto rnd = [&](std::vector<int64_t> shape) {
      return at::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat64)).to(c.dtype);
    };
    // (B, H, T, hd): T = 11 so the causal mask is not a power-of-two square, hd = 12 so the
    // scale 1/sqrt(hd) is not a power of two (with hd = 16 both kernels round identically).
    const int64_t B = 2, H = 3, T = 11, hd = 12;
    auto q = rnd({B, H, T, hd}), k = rnd({B, H, T, hd}), v = rnd({B, H, T, hd});
    auto dy = rnd({B, H, T, hd});  // the upstream gradient
    auto run = [&](const workloads::AttentionKernel& kernel) {
      auto qq = q.clone().requires_grad_(true), kk = k.clone().requires_grad_(true),
           vv = v.clone().requires_grad_(true);
      auto y = kernel(qq, kk, vv);  // (B, H, T, hd)
      auto g = torch::autograd::grad({y}, {qq, kk, vv}, {dy});
      return std::vector<torch::Tensor>{y.detach(), g[0], g[1], g[2]};
    };
    const auto a = run(math), b = run(fused);
    const char* names[] = {"output", "dq", "dk", "dv"};
    const std::string dt = c10::toString(c.dtype);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(b[i].scalar_type(), c.dtype) << names[i];
      worst(dt + " fused vs math " + names[i], b[i], a[i], c.tol);
    }
    // The mask is causal: position 0 attends to itself only, so its output is v's row 0.
    worst(dt + " fused output at t=0 vs v", b[0].select(2, 0), v.select(2, 0), c.tol);
  }
}

// ---- the model against the independent reference -----------------------------------------------

TEST_F(Numerics, ModelMatchesTheIndependentReferenceInLossLogitsGradientsAndOneAdamWStep) {
  const auto& ref = reference();
  const auto cfg = micro_config();
  const auto optim = train::OptimConfig::from(cfg);
  const auto x = ref.at("x"), y = ref.at("y");  // (B, T)
  Worst worst;
  struct Case {
    torch::Dtype dtype;
    double tol;
  };
  for (const std::string impl : {"math", "fused"})
    for (const auto& c : {Case{torch::kFloat64, kTolFp64}, Case{torch::kFloat32, kTolFp32}}) {
      SCOPED_TRACE("attention " + impl + ", " + c10::toString(c.dtype));
      auto model = build_model(cfg, impl, c.dtype);
      dist::Comm comm(one_rank(), ParallelConfig::from(cfg), torch::kCPU);
      variants::Sharding sh(model, comm, /*stage=*/0, 25.0, adamw(optim));
      sh.begin_step();
      auto logits = model->forward(x);  // (B, T, V)
      auto loss = cross_entropy(logits, y);
      loss.backward();
      sh.end_backward(true);
      const std::string dt = c10::toString(c.dtype);
      worst(dt + " " + impl + " logits", logits, ref.at("logits"), c.tol);
      worst(dt + " " + impl + " loss", loss, ref.at("loss"), c.tol);
      size_t n = 0;
      for (const auto& p : model->named_parameters()) {
        ASSERT_TRUE(p.value().grad().defined()) << p.key();
        worst(dt + " " + impl + " gradients", p.value().grad(), ref.at("grad." + p.key()), c.tol,
              p.key());
        ++n;
      }
      EXPECT_EQ(n, 28u);  // 2 embeddings + 12 per block x 2 + ln_f's 2
      // One AdamW step (t = 1, the reference's LR, no clipping) from the reference's own gradient:
      // the first step moves each element by lr * g / (|g| + eps), which turns the gradient's
      // rounding into an update error of up to lr / 4 where |g| is near eps (measured: 1.4e-3 of
      // the weights in fp32 from our own gradient), so the update is checked on its own inputs.
      {
        torch::NoGradGuard no_grad;
        for (auto& p : model->named_parameters())
          p.value().mutable_grad().copy_(ref.at("grad." + p.key()));  // into Sharding's buffer
      }
      sh.step(ref.hp("lr"), 1);
      for (const auto& p : model->named_parameters())
        worst(dt + " " + impl + " weights after AdamW", p.value(), ref.at("updated." + p.key()),
              c.tol, p.key());
    }
}

// ---- bf16 autocast ------------------------------------------------------------------------------

TEST_F(Numerics, Bf16AutocastForwardStaysWithinBf16ToleranceOfFp32) {
  const auto cfg = micro_config({"precision.compute=\"bf16\""});
  auto model = build_model(cfg, "math");
  const auto x = reference().at("x"), y = reference().at("y");
  torch::NoGradGuard no_grad;
  const auto logits32 = model->forward(x);  // (B, T, V)
  variants::Precision bf16(variants::PrecisionConfig::from(cfg), torch::kCPU);
  torch::Tensor logits16;
  {
    auto scope = bf16.forward_scope();
    logits16 = model->forward(x);
  }
  EXPECT_EQ(logits16.scalar_type(), torch::kBFloat16);  // autocast really ran the head in bf16
  Worst worst;
  const double err = worst("bf16 autocast logits vs fp32", logits16, logits32, kTolBf16);
  EXPECT_GT(err, 1e-4);  // and it rounded: fp32 would agree to ~1e-7
  worst("bf16 autocast loss vs fp32", cross_entropy(logits16.to(torch::kFloat32), y),
        cross_entropy(logits32, y), kTolBf16);
  // Outside the scope the model computes fp32 again, bit for bit as before.
  EXPECT_TRUE(torch::equal(model->forward(x), logits32));
}

// ---- ZeRO stages on 2 real Gloo ranks -----------------------------------------------------------

// Stages 0-3 on 2 ranks, 3 steps of 2 micro-batches each (clipping on), in fp32 (the runs' dtype,
// the fused AdamW kernel) and in fp64 (the same code on doubles, where rounding is 1e-16).
TEST_F(Numerics, ZeroStagesMatchStageZeroOnTwoGlooRanks) {
  SKIP_WITHOUT_GLOO();
  const auto cfg = micro_config({"parallel.world_size=2"});
  const auto optim = train::OptimConfig::from(cfg);
  constexpr int64_t kSteps = 3, kMicro = 2;
  const Batches data{2, cfg.integer("model.seq_len"), cfg.integer("model.vocab_size")};
  struct Trace {
    std::vector<double> losses;
    std::vector<std::vector<torch::Tensor>> grads, params;  // per step, per parameter
  };
  const std::vector<torch::Dtype> dtypes{torch::kFloat32, torch::kFloat64};
  std::map<torch::Dtype, std::array<std::array<Trace, 2>, 4>> traces;  // [dtype][stage][rank]
  on_two_ranks(ParallelConfig::from(cfg), [&](int rank, dist::Comm& comm) {
    for (const auto dtype : dtypes)
      for (int stage = 0; stage <= 3; ++stage) {
        auto model = build_model(cfg, "math", dtype);
        variants::Sharding sh(model, comm, stage, cfg.number("parallel.bucket_mb"), adamw(optim));
        auto& tr = traces[dtype][static_cast<size_t>(stage)][static_cast<size_t>(rank)];
        for (int64_t step = 1; step <= kSteps; ++step) {
          std::vector<torch::Tensor> xs, ys;
          for (int64_t micro = 0; micro < kMicro; ++micro) {
            auto [xb, yb] = data.at(step, micro, rank);
            xs.push_back(xb), ys.push_back(yb);
          }
          tr.losses.push_back(
              train_step(model, sh, optim, xs, ys, optim.lr_at(step, kSteps), step));
          tr.grads.push_back(sh.full_grads());
          tr.params.push_back(sh.full_params());
        }
      }
  });
  const auto names = unit_order_names(build_model(cfg, "math"));
  Worst worst;
  for (const auto dtype : dtypes) {
    const std::string dt = c10::toString(dtype);
    const double tol = dtype == torch::kFloat64 ? kTolFp64 : kTolFp32;
    // Stage 3's weights in fp32: AdamW moves each element by about lr * m / (sqrt(v) + eps), so an
    // element whose gradient is within a few eps of zero turns an fp32 rounding difference in its
    // gradient into a weight difference of up to ~lr / 4. Bounded by the step, not by fp32: 1e-3
    // of the weights (lr = 1e-2) still fails a shard that misses an update or its weight decay.
    const double weight_tol = dtype == torch::kFloat64 ? kTolFp64 : 1e-3;
    const auto& by_stage = traces.at(dtype);
    const auto& ref = by_stage[0][0];  // stage 0, rank 0
    ASSERT_EQ(ref.grads[0].size(), names.size());
    for (size_t stage = 0; stage <= 3; ++stage)
      for (size_t rank = 0; rank < 2; ++rank)
        for (size_t s = 0; s < static_cast<size_t>(kSteps); ++s) {
          SCOPED_TRACE(dt + " stage " + std::to_string(stage) + " rank " + std::to_string(rank) +
                       " step " + std::to_string(s + 1));
          const auto& a = by_stage[stage][rank];
          for (size_t i = 0; i < names.size(); ++i) {
            if (stage <= 2) {
              // ZeRO moves the math, it does not change it: the same sums of the same two
              // gradients (a + b in either order is the same number), the same elementwise AdamW
              // on each slice. Stages 1 and 2 are bitwise stage 0 (and every rank holds the same).
              EXPECT_TRUE(torch::equal(a.grads[s][i], ref.grads[s][i]))
                  << names[i] << ": grad rel err " << rel_err(a.grads[s][i], ref.grads[s][i]);
              EXPECT_TRUE(torch::equal(a.params[s][i], ref.params[s][i]))
                  << names[i] << ": param rel err " << rel_err(a.params[s][i], ref.params[s][i]);
            } else {
              // Stage 3 reduces each micro-batch's gradient as soon as its backward is done and
              // adds the reduced shards: (a1 + b1) + (a2 + b2), not (a1 + a2) + (b1 + b2).
              worst(dt + " stage 3 gradients vs stage 0", a.grads[s][i], ref.grads[s][i], tol,
                    names[i]);
              worst(dt + " stage 3 weights vs stage 0", a.params[s][i], ref.params[s][i],
                    weight_tol, names[i]);
            }
          }
          // The rank's own loss (stage 3 gathers the weights for its forward).
          EXPECT_NEAR(a.losses[s], by_stage[0][rank].losses[s],
                      stage <= 2 || s == 0 ? 0.0 : tol * a.losses[s]);
        }
    // The ranks saw different data (the comparison is not vacuous), and the weights moved.
    EXPECT_NE(by_stage[0][0].losses[0], by_stage[0][1].losses[0]);
    EXPECT_GT(rel_err(ref.params[kSteps - 1][0], reference().at("weight.wte.weight")), 1e-2);
  }
}

// ---- checkpoints --------------------------------------------------------------------------------

// Two steps, a checkpoint, a third step; then a fresh model (its own init, not these weights)
// loads the checkpoint and takes the third step again: loss and weights must be bitwise equal.
void checkpoint_round_trip(const config::Config& cfg, dist::Comm& comm, int stage,
                           const fs::path& root, std::vector<torch::Tensor>* after,
                           std::vector<torch::Tensor>* resumed, double* loss_after,
                           double* loss_resumed) {
  const auto optim = train::OptimConfig::from(cfg);
  const Batches data{4, cfg.integer("model.seq_len"), cfg.integer("model.vocab_size")};
  auto step_of = [&](workloads::GPT& model, variants::Sharding& sh, int64_t step, int64_t t) {
    auto [x, y] = data.at(step, 0, comm.rank());
    return train_step(model, sh, optim, {x}, {y}, optim.lr_at(step, 3), t);
  };
  {
    auto model = build_model(cfg, "math");
    variants::Sharding sh(model, comm, stage, cfg.number("parallel.bucket_mb"), adamw(optim));
    step_of(model, sh, 1, 1);
    step_of(model, sh, 2, 2);
    train::save_checkpoint(root, 2, train::CheckpointState{2, 2, 1.0, 0, {}, {}}, sh, comm, 2);
    *loss_after = step_of(model, sh, 3, 3);
    *after = sh.full_params();
  }
  workloads::GPT fresh(workloads::ModelConfig::from(cfg), model_kernels(cfg, "math"));
  variants::Sharding sh(fresh, comm, stage, cfg.number("parallel.bucket_mb"), adamw(optim));
  // The fresh model starts from its own init, not from the weights the checkpoint holds.
  EXPECT_FALSE(torch::equal(sh.full_params()[0], after->at(0)));
  const auto st = train::load_checkpoint(root, sh, comm.rank());
  EXPECT_EQ(st.step, 2);
  EXPECT_EQ(st.opt_steps, 2);
  *loss_resumed = step_of(fresh, sh, st.step + 1, st.opt_steps + 1);
  *resumed = sh.full_params();
}

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() /
               ("lockstep-numerics-" + name + "-" + std::to_string(std::random_device{}()));
  fs::remove_all(p);
  return p;
}

void expect_bitwise(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::equal(a[i], b[i]))
        << "parameter " << i << ": rel err " << rel_err(a[i], b[i]);
}

TEST_F(Numerics, CheckpointSaveLoadGivesABitwiseEqualNextStep) {
  const auto cfg = micro_config();
  const fs::path root = fresh_dir("ckpt1");
  dist::Comm comm(one_rank(), ParallelConfig::from(cfg), torch::kCPU);
  std::vector<torch::Tensor> after, resumed;
  double la = 0, lr = 0;
  checkpoint_round_trip(cfg, comm, 0, root, &after, &resumed, &la, &lr);
  EXPECT_EQ(la, lr);
  expect_bitwise(after, resumed);
  EXPECT_TRUE(fs::exists(root / "latest"));
  fs::remove_all(root);
}

TEST_F(Numerics, CheckpointOfShardedZero3StateOnTwoRanksGivesABitwiseEqualNextStep) {
  SKIP_WITHOUT_GLOO();
  const auto cfg = micro_config({"parallel.world_size=2"});
  const fs::path root = fresh_dir("ckpt2");
  std::vector<torch::Tensor> after[2], resumed[2];
  double la[2] = {0, 0}, lr[2] = {0, 0};
  on_two_ranks(ParallelConfig::from(cfg), [&](int rank, dist::Comm& comm) {
    checkpoint_round_trip(cfg, comm, 3, root, &after[rank], &resumed[rank], &la[rank], &lr[rank]);
  });
  EXPECT_TRUE(fs::exists(root / "step-00000002" / "optimizer.rank1.pt"));  // sharded state
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(la[r], lr[r]);
    expect_bitwise(after[r], resumed[r]);
  }
  fs::remove_all(root);
}

// The probe keeps each tensor as a CountSketch (harness/train/probe/probe.h). Linear, so the distance of
// two sketches estimates the distance of the tensors: within 1/sqrt(m) ~ 1.6% per draw here (5%
// asserted), for any dtype; a change of one element is kept exactly.
// The envelope's weight noise (issue 36: drawn where the weights live; on a CPU by a counter-based
// hash in parallel): every matrix element times (1 + e), |e| <= u, e centred; vectors untouched;
// restore_params gives the weights back bitwise; the same seed the same noise whatever the thread
// count, another seed other noise.
TEST_F(Numerics, WeightNoiseIsBoundedCentredRestoredAndTheSameOnAnyThreadCount) {
  const auto cfg = micro_config();
  auto model = build_model(cfg, "math");
  dist::Comm comm(one_rank(), ParallelConfig::from(cfg), torch::kCPU);
  variants::Sharding sh(model, comm, /*stage=*/0, 25.0, adamw(train::OptimConfig::from(cfg)));
  const double u = std::ldexp(1.0, -8);
  auto snapshot = [&] {
    std::vector<torch::Tensor> v;
    for (const auto& p : model->parameters()) v.push_back(p.detach().clone());
    return v;
  };
  const auto before = snapshot();
  auto perturbed = [&](uint64_t seed, int threads) {
    const int was = at::get_num_threads();
    at::set_num_threads(threads);
    sh.perturb_params(u, seed);
    auto v = snapshot();
    sh.restore_params();
    at::set_num_threads(was);
    return v;
  };
  const auto a1 = perturbed(42, 1), a2 = perturbed(42, 2), b = perturbed(43, 2);
  expect_bitwise(snapshot(), before);  // restored
  expect_bitwise(a1, a2);              // one thread or two: the same draw
  double sum = 0, n = 0, worst = 0;
  bool differs = false;
  const auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].dim() < 2) {
      EXPECT_TRUE(torch::equal(a1[i], before[i])) << "vector " << i << " was perturbed";
      continue;
    }
    const auto nz = before[i].abs() > 1e-6;
    const auto e = (a1[i] / before[i] - 1).masked_select(nz).to(torch::kFloat64);  // (n)
    sum += e.sum().item<double>(), n += static_cast<double>(e.numel());
    worst = std::max(worst, e.abs().max().item<double>());
    differs = differs || !torch::equal(a1[i], b[i]);
  }
  EXPECT_LE(worst, u * (1 + 1e-3));  // |e| <= u (the product rounded once in fp32)
  EXPECT_GT(worst, 0.9 * u);         // and it reaches the bound: uniform on (-u, u)
  EXPECT_LT(std::abs(sum / n), 0.05 * u) << "mean e over " << n << " elements";
  EXPECT_TRUE(differs);  // another seed, another draw
}

// The probe's sketch stays where the tensor lives (issue 36): a tensor on the meta device (no
// data; any copy of it to the host throws) is recorded without a host copy. And a structure with
// a period (one channel of C = 768 in a (T, C) tensor) spreads over distinct buckets: m is prime.
TEST(ProbeSketch, StaysOnTheTensorsDeviceAndSpreadsAPeriodicStructure) {
  train::ProbeRecorder meta;
  meta.begin_forward(0);
  EXPECT_NO_THROW(meta.add("x", torch::empty({3, 5000}, torch::TensorOptions().device(torch::kMeta))));
  meta.end_forward();
  EXPECT_THROW(torch::empty({2}, torch::TensorOptions().device(torch::kMeta)).to(torch::kCPU),
               c10::Error);  // what a host copy of a meta tensor does
  torch::manual_seed(5);
  auto d = torch::zeros({1024, 768});
  d.select(1, 5).copy_(torch::randn({1024}));  // channel 5 only: period 768
  train::ProbeRecorder rec;
  rec.begin_forward(0);
  rec.add("x", d);
  rec.end_forward();
  std::vector<std::string> names;
  const auto s = rec.take(&names).at(0);
  double sq = 0;
  for (double v : s) sq += v * v;
  // 1024 elements, 768 k + 5 mod 4093 all distinct: each bucket holds one, the norm is exact.
  const double want = d.to(torch::kFloat64).norm().item<double>();
  EXPECT_NEAR(std::sqrt(sq), want, 1e-12 * want);
}

TEST(ProbeSketch, DistancesBetweenSketchesAreDistancesBetweenTensors) {
  torch::manual_seed(7);
  auto a = torch::randn({8, 64, 128});
  auto noise = torch::randn({8, 64, 128}) * 1e-3;
  // Batch 1 (when twice) adds the same tensor again with hashes of its own.
  auto sketch = [](const torch::Tensor& t, bool twice = false) {
    train::ProbeRecorder rec;
    for (int64_t b = 0; b < (twice ? 2 : 1); ++b) {
      rec.begin_forward(b);
      rec.add("x", t);
      rec.end_forward();
    }
    std::vector<std::string> names;
    auto s = rec.take(&names);
    EXPECT_EQ(names, std::vector<std::string>{"x[0]"});
    EXPECT_EQ(s.at(0).size(), static_cast<size_t>(train::kProbeBuckets));
    return s.at(0);
  };
  auto dist = [](const std::vector<double>& x, const std::vector<double>& y) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) s += (x[i] - y[i]) * (x[i] - y[i]);
    return std::sqrt(s);
  };
  const auto sa = sketch(a);
  const double want = noise.norm().item<double>();
  EXPECT_NEAR(dist(sa, sketch(a + noise)), want, 0.05 * want);
  // bf16: the rounding of every element, seen at its size (a relative 2^-9 on average).
  const auto ab = a.to(torch::kBFloat16);
  const double want_b = (ab.to(torch::kFloat32) - a).norm().item<double>();
  EXPECT_NEAR(dist(sa, sketch(ab)), want_b, 0.05 * want_b);
  EXPECT_GT(want_b, 0);
  // One element changed: that change and nothing else.
  auto one = a.clone();
  one[3][17][99] += 0.25;
  EXPECT_NEAR(dist(sa, sketch(one)), 0.25, 1e-6);
  EXPECT_EQ(dist(sa, sketch(a.clone())), 0.0);  // the same values: the same sketch, bitwise
  // Another batch hashes elsewhere: its copy of the tensor is a second tensor's worth.
  const double na = a.norm().item<double>();
  EXPECT_NEAR(dist(sa, sketch(a, true)), na, 0.05 * na);
  // The kinds are counted within a forward: names say which call of which kernel.
  train::ProbeRecorder rec;
  rec.add("x", a);  // not recording: ignored
  rec.begin_forward(0);
  rec.add("attention", a), rec.add("layer_norm", a), rec.add("attention", a);
  rec.end_forward();
  rec.begin_forward(1);
  rec.add("attention", a), rec.add("layer_norm", a);
  EXPECT_THROW(rec.add("layer_norm", a), std::logic_error);  // another order than batch 0's
  std::vector<std::string> names;
  rec.take(&names);
  EXPECT_EQ(names, (std::vector<std::string>{"attention[0]", "layer_norm[0]", "attention[1]"}));
  // A call's inputs come before its output and carry the call's ordinal.
  rec.begin_forward(0);
  rec.add("layer_norm", a, "x"), rec.add("layer_norm", a);
  rec.add("attention", a, "q"), rec.add("attention", a), rec.add("attention", a, "q");
  rec.end_forward();
  rec.take(&names);
  EXPECT_EQ(names, (std::vector<std::string>{"layer_norm[0].x", "layer_norm[0]", "attention[0].q",
                                             "attention[0]", "attention[1].q"}));
}

// [faults] logit_scale_drift hands the attention kernel q x (1 + x) as stated, also in bf16: the
// scale is not rounded to bf16 first (which made 0.005 and 0.01 the same 0.78% drift, and 0.0025
// none). Over many elements the mean relative change is near x, and an fp32 q is scaled exactly.
TEST(Faults, LogitScaleDriftIsTheStatedDriftInBf16) {
  auto echo_q = [](const torch::Tensor& q, const torch::Tensor&, const torch::Tensor&) {
    return q;
  };
  torch::manual_seed(3);
  const auto q32 = torch::rand({4, 2, 64, 32}) + 1.0;  // (B, H, T, hd), in [1, 2)
  const auto q16 = q32.to(torch::kBFloat16);
  for (double x : {0.0025, 0.005, 0.01, 0.02}) {
    train::FaultConfig cfg;
    cfg.logit_scale_drift = x;
    auto kernel = train::FaultInjector(cfg, 0, 1).attention(echo_q);
    const auto out16 = kernel(q16, q16, q16);
    EXPECT_EQ(out16.scalar_type(), torch::kBFloat16);
    const double mean_rel =
        ((out16.to(torch::kFloat64) / q16.to(torch::kFloat64)) - 1.0).mean().item<double>();
    // q is on bf16's grid (spacing 2^-7 in [1, 2)), so a sub-spacing drift moves only the elements
    // it carries past half a spacing, by one: 0.0025 comes out as 0.0019 on average. Rounding the
    // scale first gave 0 for 0.0025 and 0.0078 for 0.005.
    EXPECT_NEAR(mean_rel, x, 0.3 * x) << x;
    const auto out32 = kernel(q32, q32, q32);
    EXPECT_TRUE(torch::equal(out32, q32 * (1.0 + x))) << x;
  }
}

}  // namespace
