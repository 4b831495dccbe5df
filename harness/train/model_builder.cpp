#include "harness/train/model_builder.h"

#include <cstdlib>

#include "harness/train/device.h"
#include "harness/train/memory.h"

namespace lockstep::train {

std::unique_ptr<RankModel> build_rank_model(const config::Config& cfg, const dist::RankInfo& who,
                                            const BuildOptions& opts) {
  auto sp = std::make_unique<RankModel>();
  auto& s = *sp;
  s.run = RunConfig::from(cfg);
  s.model_cfg = workloads::ModelConfig::from(cfg);
  s.data_cfg = workloads::DataConfig::from(cfg);
  s.optim = OptimConfig::from(cfg);
  s.stability = StabilityConfig::from(cfg);
  s.faults = FaultInjector(FaultConfig::from(cfg), who.rank, static_cast<uint64_t>(s.run.seed));
  s.par = dist::ParallelConfig::from(cfg);
  s.prof = ProfileConfig::from(cfg);
  s.who = who;
  if (who.world_size != s.par.world_size)
    cfg.fail("parallel.world_size", "the config asks for " + std::to_string(s.par.world_size) +
                                        " ranks but the job has " + std::to_string(who.world_size) +
                                        " (launch with --nproc " +
                                        std::to_string(s.par.world_size) + ")");

  // cuBLAS is deterministic only with a fixed workspace; it must be set before CUDA starts.
  if (s.run.device == "cuda" && s.run.deterministic)
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  try {
    s.device = select_device(s.run.device, who);  // one GPU per local rank, never shared
  } catch (const std::invalid_argument& e) {
    cfg.fail(torch::cuda::is_available() ? "parallel.world_size" : "run.device", e.what());
  }
  // The CUDA-only knobs: a CPU run refuses them up front (exit 2), never silently ignores them.
  if (!s.device.is_cuda()) {
    if (s.run.cuda_graphs) cfg.fail("run.cuda_graphs", "CUDA graphs need run.device = \"cuda\"");
    if (s.prof.nvtx) cfg.fail("profile.nvtx", "NVTX ranges need run.device = \"cuda\"");
  }
  if (s.run.cuda_graphs && (s.par.world_size > 1 || s.par.zero_stage > 0))
    cfg.fail("run.cuda_graphs",
             "CUDA graphs need 1 rank and zero_stage = 0 (collectives and freed gradient "
             "buffers are not captured)");

  // Determinism: fixed threads, deterministic kernels, fixed seed.
  at::set_num_threads(static_cast<int>(s.run.threads));
  // Once per process: LibTorch refuses a second call (a serving comparison builds two models).
  static const bool interop_fixed = (at::set_num_interop_threads(1), true);
  (void)interop_fixed;
  at::globalContext().setDeterministicAlgorithms(s.run.deterministic, /*warn_only=*/false);
#if LOCKSTEP_TORCH_AT_LEAST(2, 1)
  // Under deterministic algorithms LibTorch 2.1+ also fills every new tensor's memory (NaN):
  // one fill_ per allocation, a kernel launch each on a GPU (issue 52: 88 of a tiny fp32 step's
  // 90 fills outside the backward's formulas). It only makes reads of memory nobody wrote
  // repeatable; the step reads none (the flat buffers zero their own padding), so it goes.
  at::globalContext().setDeterministicFillUninitializedMemory(false);
#endif
  torch::manual_seed(static_cast<uint64_t>(s.run.seed));
  install_memory_tracking();

  try {
    s.precision =
        std::make_unique<variants::Precision>(variants::PrecisionConfig::from(cfg), s.device);
  } catch (const std::invalid_argument& e) {
    cfg.fail("precision.compute", e.what());
  }

  try {
    s.source = workloads::make_source(s.data_cfg, s.model_cfg.vocab_size, s.model_cfg.seq_len + 1,
                                      static_cast<uint64_t>(s.run.seed));
  } catch (const std::runtime_error& e) {
    cfg.fail(s.data_cfg.source == "synthetic" ? "data.source" : "data.path", e.what());
  }
  s.plan = workloads::BatchPlan{s.data_cfg.batch_size, who.world_size, s.data_cfg.grad_accum};

  s.kernels = registry::kernels_for(cfg);
  workloads::ModelKernels mk{s.kernels.attention, s.kernels.activation, s.kernels.layer_norm};
  if (opts.probe && (who.world_size != 1 || s.par.zero_stage != 0))
    cfg.fail(who.world_size != 1 ? "parallel.world_size" : "parallel.zero_stage",
             "a probe run needs one rank and zero_stage = 0");
  if (opts.wrap_kernels) mk = opts.wrap_kernels(std::move(mk));
  // Outside the probe's recorder: it records a kernel's inputs as the kernel receives them.
  mk.attention = s.faults.attention(std::move(mk.attention));
  s.model = workloads::GPT(s.model_cfg, std::move(mk));
  s.model->to(s.device);
  s.comm = std::make_unique<dist::Comm>(who, s.par, s.device);
  s.comm->set_nvtx(s.prof.nvtx);
  // The optimizer (AdamW with the [optim] hyperparameters) runs inside the sharding layer, on the
  // slices this rank owns.
  s.sharding = std::make_unique<variants::Sharding>(
      s.model, *s.comm, static_cast<int>(s.par.zero_stage), s.par.bucket_mb,
      [fn = s.kernels.optimizer, o = s.optim](torch::Tensor& p, const torch::Tensor& g,
                                              torch::Tensor& m, torch::Tensor& v,
                                              const torch::Tensor& decay, double lr, int64_t t) {
        fn(p, g, m, v, decay, plugin::AdamWStep{lr, t, o.beta1, o.beta2, o.eps, o.weight_decay});
      });
  if (opts.trains && variants::WeightCopies::applies(s.precision->autocasts(),
                                                     static_cast<int>(s.par.zero_stage),
                                                     s.run.cuda_graphs))
    s.weight_copies = std::make_unique<variants::WeightCopies>(*s.sharding, s.precision->dtype());
  return sp;
}

torch::Tensor RankModel::host_tokens(int64_t step, int64_t micro) const {
  const int64_t B = plan.local_batch(), L = model_cfg.seq_len + 1;
  // On CUDA the batch is built in pinned memory and copied without a host sync (a copy from
  // pageable memory would first wait for the stream); the allocator keeps the buffer until then.
  auto buf = torch::empty(
      {B, L},
      torch::TensorOptions().dtype(torch::kInt64).pinned_memory(device.is_cuda()));  // (B, T+1)
  int64_t* p = buf.data_ptr<int64_t>();
  for (int64_t row = 0; row < B; ++row)
    source->sample(plan.index(step, micro, who.rank, row), p + row * L, L);
  return buf;
}

Batch RankModel::to_device(const torch::Tensor& tokens, StepRecord* stats) const {
  if (stats) {
    const auto st =
        workloads::batch_stats(tokens.data_ptr<int64_t>(), static_cast<size_t>(tokens.numel()));
    stats->batch_entropy = st.token_entropy;
    stats->batch_repeat_share = st.repeat_share;
    stats->batch_hash = st.hash;
  }
  auto batch = tokens.to(device, /*non_blocking=*/device.is_cuda());  // (B, T+1)
  return Batch{batch.narrow(1, 0, model_cfg.seq_len), batch.narrow(1, 1, model_cfg.seq_len)};
}

Losses RankModel::model_loss(const torch::Tensor& x, const torch::Tensor& y) {
  auto scope = precision->forward_scope();
  // (B*T, V), in the autocast dtype: the [optim]-selected loss kernel casts what it needs (the
  // built-in casts to fp32); with a z-loss one fp32 cast serves both terms.
  auto logits = model->forward(x).view({-1, model_cfg.vocab_size});
  if (stability.z_loss > 0) logits = logits.to(torch::kFloat32);
  // Cross-entropy over (B*T, V) logits and (B, T) targets; with [stability] z_loss, PaLM's z-loss
  // is added to what is differentiated, never to what is reported.
  Losses l;
  l.reported = kernels.loss(logits, y.reshape({-1}));
  l.train = stability.z_loss > 0
                ? l.reported + stability.z_loss * torch::logsumexp(logits, -1).pow(2).mean()
                : l.reported;
  return l;
}

}  // namespace lockstep::train
