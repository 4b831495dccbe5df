// The CUDA path (issue 17), in process with the real LibTorch. The defects a reading of the code
// found are tested here on the CPU wherever a CPU can show them; what only a GPU can show is in the
// Cuda* tests, which skip without a CUDA device and run in bench/gpu-check.sh (ctest -L cuda).
#include <gtest/gtest.h>

#include <ATen/ThreadLocalState.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/dist/comm.h"
#include "harness/dist/parallel_config.h"
#include "harness/kernels/registry.h"
#include "harness/train/device.h"
#include "harness/train/memory.h"
#include "harness/vocab/optim_config.h"
#include "harness/train/phase_timer.h"
#include "harness/train/profile/profiler.h"
#include "harness/train/step_graph.h"
#include "variants/adamw.h"
#include "variants/attention.h"
#include "variants/sharding.h"
#include "workloads/gpt.h"
#include "weight_copies_step.h"

namespace lockstep {
namespace {

using train::OpProfiler;
using train::TraceLog;

workloads::ModelConfig tiny_model() {
  workloads::ModelConfig m;
  m.preset = "tiny";
  m.d_model = 32;
  m.n_layers = 2;
  m.n_heads = 2;
  m.seq_len = 16;
  m.vocab_size = 64;
  return m;
}

// The model's built-in kernels (the registry's "math" attention, "gelu", "layer_norm").
workloads::ModelKernels builtin_kernels() {
  registry::install();
  return {registry::attention_kernel("math"), registry::activation_kernel("gelu"),
          registry::layer_norm_kernel("layer_norm")};
}

// The trainer's optimizer update for the sharding layer: AdamW.
variants::ShardUpdate optim() {
  train::OptimConfig o;
  o.lr = 1e-3;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-8;
  return [o](torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v,
             const torch::Tensor& decay, double lr, int64_t t) {
    variants::adamw_update(p, g, m, v, decay,
                           plugin::AdamWStep{lr, t, o.beta1, o.beta2, o.eps, o.weight_decay});
  };
}

dist::ParallelConfig one_rank(const std::string& backend = "auto", int64_t zero_stage = 0) {
  return dist::ParallelConfig{1, zero_stage, backend, 25.0, 60.0};
}

const OpStat* find_op(const std::vector<OpStat>& ops, const std::string& name) {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

nlohmann::json written(const TraceLog& trace) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("lockstep_cuda_path_trace_" + std::to_string(::getpid()) + ".json");
  trace.write(path);
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return j;
}

// --- CPU: the defects a CPU can show ------------------------------------------------------------

// On CUDA autograd runs the backward on a device thread of its own and hands it this thread's
// RecordFunction callbacks through at::ThreadLocalState. The profiler kept its state in
// thread_local storage, so everything that thread ran was dropped: every backward operator on CUDA.
// Here the same hand-over, on the CPU.
TEST(OpProfiler, RecordsOperatorsRunOnAnotherThread) {
  OpProfiler prof;
  TraceLog trace(0);
  prof.start(&trace, std::chrono::steady_clock::now());
  const auto a = torch::ones({8, 8});
  const at::ThreadLocalState handed_over;  // what the autograd engine captures for its threads
  std::thread worker([&] {
    at::ThreadLocalStateGuard guard(handed_over);
    auto c = torch::mm(a, a);
  });
  worker.join();
  auto local = torch::add(a, a);
  prof.step_done();
  prof.stop();

  const auto top = prof.top(100);
  const OpStat* mm = find_op(top, "aten::mm");
  ASSERT_NE(mm, nullptr) << "the operator that ran on the other thread is missing";
  EXPECT_DOUBLE_EQ(mm->calls, 1.0);
  ASSERT_NE(find_op(top, "aten::add"), nullptr);
  EXPECT_EQ(prof.clock().rfind("host", 0), 0u) << prof.clock();

  // In the trace, each thread has a lane of its own: the starting thread 0, the other 1.
  int mm_lane = -1, add_lane = -1;
  const auto json = written(trace);
  for (const auto& e : json["traceEvents"]) {
    if (e.value("cat", "") != "op") continue;
    if (e["name"] == "aten::mm") mm_lane = e["tid"].get<int>();
    if (e["name"] == "aten::add") add_lane = e["tid"].get<int>();
  }
  EXPECT_EQ(add_lane, 0);
  EXPECT_EQ(mm_lane, 1);
}

TEST(OpProfiler, RecordsTheBackwardOfATinyModel) {
  auto model = workloads::GPT(tiny_model(), builtin_kernels());
  auto x = torch::randint(0, 64, {2, 16}, torch::kInt64);
  OpProfiler prof;
  prof.start(nullptr, std::chrono::steady_clock::now());
  auto loss = model->forward(x).sum();
  loss.backward();
  prof.step_done();
  prof.stop();
  bool backward_seen = false;
  for (const auto& o : prof.top(1000))
    backward_seen = backward_seen || o.name.find("Backward") != std::string::npos;
  EXPECT_TRUE(backward_seen);
}

// fp16 with ZeRO-2/3 counted the non-finite gradient elements into a host tensor and all-reduced
// that: NCCL takes device tensors only, and the failure read as a lost rank. The count now lives on
// the gradients' device, the communication device, through a real (1-rank Gloo) all-reduce; that
// a host tensor never reaches NCCL is Cuda.Fp16Zero2OverflowCountGoesThroughNccl (a CPU has no
// second device to tell the two apart: LibTorch cannot move a module to "meta"), and every
// collective refuses a tensor off the communication device (Comm.RefusesATensorOff...).
TEST(Sharding, NonfiniteCountIsReducedOnTheCommunicationDevice) {
#if defined(LOCKSTEP_NO_GLOO)
  GTEST_SKIP() << "needs Gloo (a 1-rank CPU group): this build's LibTorch ships no Gloo headers; "
                  "runs in the Debian build";
#endif
  for (int stage : {2, 3}) {
    SCOPED_TRACE("zero_stage " + std::to_string(stage));
    auto model = workloads::GPT(tiny_model(), builtin_kernels());
    dist::Comm comm(dist::RankInfo{}, one_rank("gloo", stage), torch::Device(torch::kCPU));
    EXPECT_EQ(comm.backend_name(), "gloo");
    variants::Sharding sharding(model, comm, stage, 25.0, optim());
    sharding.begin_step();
    auto x = torch::randint(0, 64, {2, 16}, torch::kInt64);
    model->forward(x).sum().backward();
    sharding.end_backward(true);
    const auto n = sharding.nonfinite_grads_tensor();
    EXPECT_EQ(n.device(), comm.device());
    EXPECT_EQ(n.numel(), 1);
    EXPECT_EQ(sharding.count_nonfinite_grads(), 0);
    sharding.scale_grads(std::numeric_limits<double>::infinity());  // 0 * inf = NaN: all of them
    EXPECT_EQ(sharding.count_nonfinite_grads(), sharding.accounting().grad_bytes / 4);
  }
}

TEST(Comm, RefusesATensorOffTheCommunicationDevice) {
  dist::Comm comm(dist::RankInfo{}, one_rank(), torch::Device(torch::kMeta));
  auto host = torch::zeros({4});
  try {
    comm.allreduce_sum(host, "all_reduce(test)");
    FAIL() << "a host tensor passed";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("all_reduce(test)"), std::string::npos) << what;
    EXPECT_NE(what.find("communication device is meta"), std::string::npos) << what;
  }
}

TEST(Comm, ANamedBackendOnOneRankRunsARealGroup) {
  auto t = torch::arange(4, torch::kFloat32);
#if defined(LOCKSTEP_NO_GLOO)
  // A build without Gloo (the wheel build) refuses the named backend in one line saying why.
  try {
    dist::Comm comm(dist::RankInfo{}, one_rank("gloo"), torch::Device(torch::kCPU));
    ADD_FAILURE() << "a gloo group was made in a build without Gloo";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("this LibTorch ships no Gloo headers"), std::string::npos)
        << e.what();
  }
#else
  dist::Comm comm(dist::RankInfo{}, one_rank("gloo"), torch::Device(torch::kCPU));
  EXPECT_EQ(comm.backend_name(), "gloo");
  comm.allreduce_sum(t, "all_reduce(test)");
  EXPECT_TRUE(torch::equal(t, torch::arange(4, torch::kFloat32)));
  EXPECT_FALSE(comm.take_wait().empty());  // the wait was recorded (host clock on Gloo)
#endif
  // "auto" on one rank: no group, no collective, nothing waited for.
  dist::Comm none(dist::RankInfo{}, one_rank(), torch::Device(torch::kCPU));
  EXPECT_EQ(none.backend_name(), "none");
  none.allreduce_sum(t, "all_reduce(test)");
  EXPECT_TRUE(none.take_wait().empty());
}

TEST(Device, CpuRunsOnTheCpuAndHasNoGpuRecord) {
  const auto d = train::select_device("cpu", dist::RankInfo{});
  EXPECT_TRUE(d.is_cpu());
  EXPECT_FALSE(train::gpu_info(d));
  EXPECT_TRUE(train::gpu_environment(d).empty());
}

TEST(Memory, CpuStatsHaveNoReservedPool) {
  train::install_memory_tracking();
  const auto m = train::memory_stats(torch::Device(torch::kCPU));
  EXPECT_FALSE(m.peak_reserved_bytes);
  EXPECT_FALSE(m.fragmentation_bytes);
  EXPECT_TRUE(train::is_out_of_memory(std::bad_alloc()));
  EXPECT_FALSE(train::is_out_of_memory(std::runtime_error("shape mismatch")));
}

// --- CUDA: what only a GPU can show (skipped here; bench/gpu-check.sh runs them) ----------------

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device"

TEST(Cuda, ProfilerRecordsTheBackwardOnAutogradsDeviceThread) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  auto model = workloads::GPT(tiny_model(), builtin_kernels());
  model->to(dev);
  auto x = torch::randint(0, 64, {2, 16}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  OpProfiler prof;
  prof.set_device(dev);
  TraceLog trace(0);
  prof.start(&trace, std::chrono::steady_clock::now());
  model->forward(x).sum().backward();
  torch::cuda::synchronize();
  prof.step_done();
  prof.stop();
  bool backward_seen = false;
  for (const auto& o : prof.top(1000))
    backward_seen = backward_seen || o.name.find("Backward") != std::string::npos;
  EXPECT_TRUE(backward_seen) << prof.clock();
  if (prof.clock().rfind("device", 0) == 0) {
    EXPECT_FALSE(prof.top_kernels(10).empty());
    double device_ms = 0;
    for (const auto& k : prof.top_kernels(1000)) device_ms += k.self_ms;
    EXPECT_GT(device_ms, 0.0);
  }
}

TEST(Cuda, PhasesAreDeviceTimeAndSumToTheStep) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  auto a = torch::randn({1024, 1024}, torch::TensorOptions().device(dev));
  train::PhaseTimer timer(dev);
  EXPECT_TRUE(timer.device_time());
  timer.start();
  auto b = torch::mm(a, a);
  timer.mark(Phase::Forward);
  auto c = torch::mm(b, a);
  timer.mark(Phase::Backward);
  double step_ms = 0;
  (void)c.sum().item<float>();
  const auto phases = timer.finish(&step_ms);
  EXPECT_GT(phases.at("forward"), 0.0);
  EXPECT_GT(phases.at("backward"), 0.0);
  EXPECT_NEAR(phases.at("forward") + phases.at("backward"), step_ms, 1e-6);
}

TEST(Cuda, OneRankNcclGroupAllReducesWithoutBlockingTheHost) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  train::select_device("cuda", dist::RankInfo{});
  dist::Comm comm(dist::RankInfo{}, one_rank("nccl"), dev);
  ASSERT_EQ(comm.backend_name(), "nccl");
  auto t = torch::ones({1 << 20}, torch::TensorOptions().device(dev));
  comm.allreduce_sum(t, "all_reduce(test)");
  auto wait = comm.take_wait();
  EXPECT_FALSE(wait.empty());
  EXPECT_EQ(t.sum().item<float>(), static_cast<float>(1 << 20));  // the host sync
  EXPECT_GE(wait.ms(), 0.0);
  EXPECT_GE(comm.take_stream_ms(), 0.0);
  auto host = torch::ones({4});
  EXPECT_THROW(comm.allreduce_sum(host, "all_reduce(host)"), std::invalid_argument);
}

TEST(Cuda, Fp16Zero2OverflowCountGoesThroughNccl) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  dist::Comm comm(dist::RankInfo{}, one_rank("nccl", 2), dev);
  auto model = workloads::GPT(tiny_model(), builtin_kernels());
  model->to(dev);
  variants::Sharding sharding(model, comm, 2, 25.0, optim());
  sharding.begin_step();
  auto x = torch::randint(0, 64, {2, 16}, torch::TensorOptions().dtype(torch::kInt64).device(dev));
  model->forward(x).sum().backward();
  sharding.end_backward(true);
  sharding.scale_grads(std::numeric_limits<double>::infinity());
  EXPECT_GT(sharding.count_nonfinite_grads(), 0);
}

TEST(Cuda, MemoryStatsSeeTheCachingAllocator) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  train::reset_peak_tensor_bytes(dev);
  auto t = torch::empty({64 << 20}, torch::TensorOptions().dtype(torch::kUInt8).device(dev));
  const auto m = train::memory_stats(dev);
  EXPECT_GE(m.peak_allocated_bytes, 64 << 20);
  ASSERT_TRUE(m.peak_reserved_bytes);
  EXPECT_GE(*m.peak_reserved_bytes, m.peak_allocated_bytes);
  EXPECT_EQ(*m.fragmentation_bytes, *m.peak_reserved_bytes - m.peak_allocated_bytes);
  EXPECT_NE(train::allocator_summary(dev).find("reserved"), std::string::npos);
}

TEST(Cuda, GpuInfoIsTheRanksOwnDevice) {
  REQUIRE_CUDA();
  const auto d = train::select_device("cuda", dist::RankInfo{});
  const auto g = train::gpu_info(d);
  ASSERT_TRUE(g);
  EXPECT_FALSE(g->name.empty());
  EXPECT_GT(g->sm_count, 0);
  EXPECT_GT(g->max_sm_clock_mhz, 0);
  const auto env = train::gpu_environment(d);
  EXPECT_EQ(env.at("gpu"), g->name);
  EXPECT_FALSE(env.at("cuda_runtime").empty());
}

TEST(Cuda, GraphReplayIsBitwiseTheEagerStep) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  torch::manual_seed(7);
  auto model = workloads::GPT(tiny_model(), builtin_kernels());
  model->to(dev);
  auto opts = torch::TensorOptions().dtype(torch::kInt64).device(dev);
  auto x = torch::randint(0, 64, {2, 16}, opts), y = torch::randint(0, 64, {2, 16}, opts);
  auto forward = [&](const torch::Tensor& xs, const torch::Tensor& ys) {
    auto logits = model->forward(xs).view({-1, 64});
    auto loss = torch::nn::functional::cross_entropy(logits, ys.reshape({-1}));
    return std::make_pair(loss, loss);
  };
  auto grads = [&] {
    std::vector<torch::Tensor> g;
    for (auto& p : model->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  // The eager step's autograd graph must be gone before the capture: while its loss lives, the
  // parameters' AccumulateGrad nodes it holds keep the stream they were made on (the default
  // stream), and a capture that reuses them is illegal (pytorch#64339).
  double eager_loss = 0;
  {
    auto eager = forward(x, y).first;
    eager.backward();
    eager_loss = eager.item<double>();
  }
  const auto eager_grads = grads();
  torch::cuda::synchronize();

  for (auto& p : model->parameters()) p.mutable_grad().zero_();
  train::StepGraph graph;
  graph.capture(x, y, forward);
  const auto graph_loss = graph.forward(x, y).item<double>();
  graph.backward(1.0);
  const auto graph_grads = grads();
  EXPECT_EQ(graph_loss, eager_loss);
  for (size_t i = 0; i < eager_grads.size(); ++i)
    EXPECT_TRUE(torch::equal(graph_grads[i], eager_grads[i])) << "parameter " << i;
}

// The step's bf16 weight copies (variants/weight_copies.h) on a GPU, where their gradient edges
// run on autograd's device thread: the losses and every gradient bit for bit autocast's casts,
// at one and two micro-batches per step.
TEST(Cuda, WeightCopiesGiveAutocastsLossesAndGradientsBitForBit) {
  REQUIRE_CUDA();
  for (const int64_t A : {1, 2}) {
    SCOPED_TRACE("micro-batches " + std::to_string(A));
    auto m = lockstep::testing::bf16_model("cuda", 0);
    ASSERT_NE(m->weight_copies, nullptr);
    const auto cast = lockstep::testing::copies_step(*m, A, false);
    const auto copied = lockstep::testing::copies_step(*m, A, true);
    EXPECT_EQ(copied.losses, cast.losses);
    ASSERT_EQ(copied.grads.size(), cast.grads.size());
    for (size_t i = 0; i < cast.grads.size(); ++i)
      EXPECT_TRUE(torch::equal(copied.grads[i], cast.grads[i])) << "parameter " << i;
  }
}

// [optim] impl = "fused": LibTorch's fused AdamW kernel against the built-in tensor-op update, 10
// steps on flat fp32 buffers with the weight-decay mask half on: within fp32 rounding (relative
// 1e-5 of the parameters), never a no-op.
TEST(Cuda, FusedAdamWMatchesTheBuiltInUpdate) {
  REQUIRE_CUDA();
  const torch::Device dev(torch::kCUDA, 0);
  torch::manual_seed(11);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(dev);
  const int64_t n = 1 << 16;
  auto p0 = torch::randn({n}, f32);
  auto decay = (torch::arange(n, f32) < n / 2).to(torch::kFloat32);
  auto p_ref = p0.clone(), m_ref = torch::zeros({n}, f32), v_ref = torch::zeros({n}, f32);
  auto p_fused = p0.clone(), m_fused = torch::zeros({n}, f32), v_fused = torch::zeros({n}, f32);
  for (int64_t t = 1; t <= 10; ++t) {
    const auto g = torch::randn({n}, f32);
    const plugin::AdamWStep s{3e-3, t, 0.9, 0.95, 1e-8, 0.1};
    variants::adamw_update(p_ref, g, m_ref, v_ref, decay, s);
    variants::fused_adamw_update(p_fused, g, m_fused, v_fused, decay, s);
  }
  EXPECT_GT((p_fused - p0).abs().max().item<double>(), 1e-3);  // it moved
  EXPECT_LT(((p_fused - p_ref).abs() / p_ref.abs().clamp_min(1e-3)).max().item<double>(), 1e-5);
  EXPECT_LT((m_fused - m_ref).abs().max().item<double>(), 1e-6);
  EXPECT_LT((v_fused - v_ref).abs().max().item<double>(), 1e-6);
}

}  // namespace
}  // namespace lockstep
