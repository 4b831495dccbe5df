#include "harness/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>

#include "harness/dist/comm.h"
#include "harness/kernels/registry.h"
#include "harness/train/checkpoint.h"
#include "harness/train/checkpoint_config.h"
#include "harness/train/device.h"
#include "harness/train/faults.h"
#include "harness/train/memory.h"
#include "harness/train/nvtx_layers.h"
#include "harness/train/optim_config.h"
#include "harness/train/phase_timer.h"
#include "harness/train/probe.h"
#include "harness/train/profile_config.h"
#include "harness/train/profile_window.h"
#include "harness/train/run_config.h"
#include "harness/train/stability.h"
#include "harness/train/step_graph.h"
#include "harness/train/step_turn.h"
#include "harness/train/trace.h"
#include "harness/util/clock.h"
#include "variants/attention.h"
#include "variants/precision.h"
#include "variants/sharding.h"
#include "workloads/data.h"
#include "workloads/gpt.h"

namespace lockstep::train {

namespace {

// One micro-batch: inputs and next-token targets.
struct Batch {
  torch::Tensor x, y;  // (B, T), (B, T)
};

// One micro-batch's loss: what is reported, and what is differentiated (+ regularizers).
struct Losses {
  torch::Tensor reported, train;  // scalars
};

}  // namespace

struct Trainer::Impl {
  RunConfig run;
  workloads::ModelConfig model_cfg;
  workloads::DataConfig data_cfg;
  OptimConfig optim;
  StabilityConfig stability;
  OutlierWindow outliers{50};
  FaultInjector faults;
  CheckpointConfig ckpt_cfg;
  dist::ParallelConfig par;
  TrainOptions opts;
  torch::Device device{torch::kCPU};
  dist::RankInfo who;
  std::unique_ptr<dist::Comm> comm;
  registry::Kernels kernels;  // the implementations the config selects (built-ins or plugins)
  std::unique_ptr<workloads::TokenSource> source;
  workloads::BatchPlan plan;
  workloads::GPT model{nullptr};
  std::unique_ptr<variants::Precision> precision;
  std::unique_ptr<variants::Sharding> sharding;
  Progress progress;
  ProfileConfig prof;
  std::shared_ptr<TraceLog> trace;
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  std::unique_ptr<ProfileWindow> window;
  std::unique_ptr<NvtxLayers> nvtx_layers;  // [profile] nvtx
  std::unique_ptr<compat::NvtxRange> step_range, phase_range;
  std::unique_ptr<StepGraph> graph;  // [run] cuda_graphs
  std::unique_ptr<ProbeRecorder> probe;  // TrainOptions::probe_from
  StepTurn turn;  // compare's timing pairs take turns step by step (harness/train/step_turn.h)
  int64_t first_step = 1;
  int64_t opt_steps = 0;  // updates applied (AdamW's t)

  // The pieces of one step, in the order run_steps calls them. Each names the phase it is in for
  // the watchdog (Progress::phase); run_steps books the time at the phase boundaries.

  // Where the step is (the watchdog reads it); with [profile] nvtx, an NVTX range per phase.
  void phase(const char* p) {
    progress.phase = p;
    if (!prof.nvtx) return;
    phase_range.reset();
    phase_range = std::make_unique<compat::NvtxRange>(true, p);
  }
  // Ends the step's and the phase's NVTX ranges (at the step's end, and when a run stops early).
  void end_ranges() {
    phase_range.reset();
    step_range.reset();
  }

  // A new step's record: who, how many tokens, its learning rate, whether it is timed.
  StepRecord begin_step(int64_t step) {
    progress.step = step;
    progress.step_started_ns = util::steady_now_ns();
    if (prof.nvtx)
      step_range =
          std::make_unique<compat::NvtxRange>(true, ("step " + std::to_string(step)).c_str());
    StepRecord rec;
    rec.step = step;
    rec.rank = who.rank;
    rec.tokens = data_cfg.batch_size * data_cfg.grad_accum * model_cfg.seq_len;
    // Warmup steps are never timed, nor are the profile window's steps (also when a resume lands
    // inside the window and the profiler never starts), nor the first warmup_steps steps of a
    // resumed process: it is as cold as a fresh one.
    const bool cold = first_step > 1 && step < first_step + run.warmup_steps;
    rec.timed = step > run.warmup_steps && !prof.covers(step, run.warmup_steps) && !cold;
    rec.lr = faults.lr(step, optim.lr_at(step, run.steps));
    faults.at_step_start(step);
    window->before_step(step);
    if (window->profiling()) rec.timed = false;
    return rec;
  }

  // [run] cuda_graphs replays the step's forward and backward from step 2 (shapes static, kernels
  // and allocator warm), except where hooks, host clocks or an injected fault must run (profiled
  // and warm-up steps, faults.nonfinite_at).
  bool graphed(int64_t step) const {
    return graph && step >= 2 && !window->hooks_on() && !faults.changes_loss(step);
  }

  // Data: this rank's rows of the global micro-batch, a pure function of (seed, step, micro,
  // rank). The first micro-batch's statistics go into the record (the spike diagnosis reads them).
  Batch data(int64_t step, int64_t micro, StepRecord& rec) {
    phase("data");
    const int64_t B = plan.local_batch(), L = model_cfg.seq_len + 1;
    // On CUDA the batch is built in pinned memory and copied without a host sync (a copy from
    // pageable memory would first wait for the stream); the allocator keeps the buffer until then.
    auto buf = torch::empty(
        {B, L},
        torch::TensorOptions().dtype(torch::kInt64).pinned_memory(device.is_cuda()));  // (B, T+1)
    int64_t* p = buf.data_ptr<int64_t>();
    for (int64_t row = 0; row < B; ++row)
      source->sample(plan.index(step, micro, who.rank, row), p + row * L, L);
    faults.on_batch(step, p, B * L);
    if (micro == 0) {
      const auto st = workloads::batch_stats(p, static_cast<size_t>(B * L));
      rec.batch_entropy = st.token_entropy;
      rec.batch_repeat_share = st.repeat_share;
      rec.batch_hash = st.hash;
    }
    auto batch = buf.to(device, /*non_blocking=*/device.is_cuda());  // (B, T+1)
    return Batch{batch.narrow(1, 0, model_cfg.seq_len), batch.narrow(1, 1, model_cfg.seq_len)};
  }

  // Forward, up to the loss, under the precision variant's scope. A graphed step replays the
  // captured forward (captured here first, in an untimed step); its loss is a static tensor that
  // the next replay overwrites, so it is read before then.
  Losses forward(int64_t step, const Batch& b, bool graphed, StepRecord& rec) {
    phase("forward");
    if (graphed && !graph->captured()) {
      try {
        graph->capture(b.x, b.y, [this](const torch::Tensor& x, const torch::Tensor& y) {
          const Losses l = model_loss(x, y);
          return std::make_pair(l.reported, l.train);
        });
      } catch (const std::exception& e) {
        throw std::runtime_error("run.cuda_graphs: capturing step " + std::to_string(step) +
                                 " failed: " + e.what());
      }
      rec.timed = false;  // the capture step is never timed
    }
    Losses l;
    window->forward_begin();
    if (graphed)
      l.reported = l.train = graph->forward(b.x, b.y);
    else
      l = model_loss(b.x, b.y);
    window->forward_end();
    faults.on_loss(step, l.reported, l.train);
    return l;
  }

  // The model's forward and the loss, x, y: (B, T).
  Losses model_loss(const torch::Tensor& x, const torch::Tensor& y) {
    auto scope = precision->forward_scope();
    // (B*T, V), in the autocast dtype: the [optim]-selected loss kernel casts what it needs (the
    // built-in casts to fp32); with a z-loss one fp32 cast serves both terms.
    auto logits = model->forward(x).view({-1, model_cfg.vocab_size});
    if (stability.z_loss > 0) logits = logits.to(torch::kFloat32);
    return loss(logits, y);
  }

  // The loss: cross-entropy over (B*T, V) logits and (B, T) targets; with [stability] z_loss,
  // PaLM's z-loss is added to what is differentiated, never to what is reported.
  Losses loss(const torch::Tensor& logits, const torch::Tensor& y) const {
    Losses l;
    l.reported = kernels.loss(logits, y.reshape({-1}));
    l.train = stability.z_loss > 0
                  ? l.reported + stability.z_loss * torch::logsumexp(logits, -1).pow(2).mean()
                  : l.reported;
    return l;
  }

  // Backward of the micro-batch's share of the step's loss (times the fp16 loss scale); a graphed
  // step replays the captured backward with that factor.
  void backward(const torch::Tensor& train_loss, bool graphed) {
    phase("backward");
    window->backward_begin();
    const double scale = precision->loss_scale() / static_cast<double>(data_cfg.grad_accum);
    if (graphed)
      graph->backward(scale);
    else
      (train_loss * scale).backward();
    window->backward_end();
  }

  // Gradient reduction across ranks (the sharding variant), once the step's last micro-batch has
  // added its gradients.
  void reduce(bool last_micro) {
    phase("comm");
    sharding->end_backward(last_micro);
  }

  // The step's mean loss over this rank's micro-batches, and over the global batch (every rank
  // holds an equal share of it). Device tensors: read after the step's work is queued.
  std::pair<torch::Tensor, torch::Tensor> mean_loss(const torch::Tensor& loss_sum) {
    phase("optimizer");
    auto local_loss = loss_sum / static_cast<double>(data_cfg.grad_accum);
    auto global_loss = local_loss.clone();
    comm->allreduce_sum(global_loss, "all_reduce(loss)");
    global_loss /= static_cast<double>(who.world_size);
    return {local_loss, global_loss};
  }

  // The reduced gradients: unscaled (fp16), then their global and per-unit norms (a host sync).
  void measure_grads(int64_t step, StepRecord& rec) {
    const double inv_scale = 1.0 / precision->loss_scale();
    if (inv_scale != 1.0) sharding->scale_grads(inv_scale);
    faults.on_grads(step, *sharding);
    auto unit_sq = sharding->unit_grad_norms_sq();
    double norm_sq = 0;
    for (double v : unit_sq) {
      norm_sq += v;
      rec.unit_grad_norms.push_back(std::sqrt(v));
    }
    rec.grad_norm = std::sqrt(norm_sq);
    if (!std::isfinite(rec.grad_norm)) rec.nonfinite_grads = sharding->count_nonfinite_grads();
  }

  // Optimizer step: skipped on an fp16 overflow or, under [stability] skip_outlier_z, an outlier
  // loss or gradient norm; otherwise gradients clipped to optim.clip_grad_norm and the update
  // applied on the slices this rank owns (Sharding::step runs the optimizer, AdamW).
  void update(const torch::Tensor& global_loss, StepRecord& rec) {
    const bool finite = std::isfinite(rec.grad_norm);
    rec.loss_scale = precision->loss_scale();
    bool skip = precision->update(finite);
    rec.overflow = !finite;
    if (!skip && stability.skip_outlier_z > 0 &&
        outliers.is_outlier(global_loss.item<double>(), rec.grad_norm, stability.skip_outlier_z)) {
      skip = true;
      rec.skipped_outlier = true;
    }
    rec.skipped = skip;
    if (skip) return;
    if (optim.clip_grad_norm > 0 && rec.grad_norm > optim.clip_grad_norm)
      sharding->scale_grads(optim.clip_grad_norm / (rec.grad_norm + 1e-6));
    sharding->step(rec.lr, ++opt_steps);
  }

  // Injected delays ([faults]): part of the step, booked as "other".
  void delay(int64_t step) {
    phase("other");
    faults.delay(step, progress.step_started_ns);
  }

  // Closes the step: phase times, bytes sent and the collectives' stream time into the record,
  // its spans into the trace, and a profiled step into the window. What follows (observers,
  // checkpoint) is not part of the step.
  void record(int64_t step, PhaseTimer& timer, StepRecord& rec) {
    rec.phase_ms = timer.finish(&rec.step_ms);
    rec.comm_bytes = comm->take_bytes();
    rec.comm_stream_ms = comm->take_stream_ms();
    if (trace) {
      auto us = [&](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double, std::micro>(t - epoch).count();
      };
      auto spans = timer.host_spans();
      if (!spans.empty())
        trace->add(TraceEvent{"step " + std::to_string(step), "step", 'X', us(spans.front().start),
                              us(spans.back().end) - us(spans.front().start), 0});
      for (const auto& sp : spans)
        trace->add(TraceEvent{sp.phase, "phase", 'X', us(sp.start), us(sp.end) - us(sp.start), 0});
    }
    window->after_step();
    end_ranges();
    progress.phase = "checkpoint";
  }

  // A checkpoint every ckpt_cfg.every steps (none after the last step). The save is not part of
  // the step (step_ms leaves it out): the watchdog times it on its own clock, against
  // step_timeout_s only.
  void checkpoint(int64_t step) {
    if (ckpt_cfg.every <= 0 || step % ckpt_cfg.every != 0 || step >= run.steps) return;
    progress.step_started_ns = util::steady_now_ns();
    CheckpointState st{step,
                       opt_steps,
                       precision->state().first,
                       precision->state().second,
                       outliers.losses(),
                       outliers.norms()};
    save_checkpoint(opts.out_dir / "checkpoints", step, st, *sharding, *comm, ckpt_cfg.keep);
  }
};

Trainer::Trainer(const config::Config& cfg, const dist::RankInfo& who, TrainOptions opts)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.run = RunConfig::from(cfg);
  s.model_cfg = workloads::ModelConfig::from(cfg);
  s.data_cfg = workloads::DataConfig::from(cfg);
  s.optim = OptimConfig::from(cfg);
  s.stability = StabilityConfig::from(cfg);
  s.outliers = OutlierWindow(static_cast<size_t>(s.stability.outlier_window));
  s.faults = FaultInjector(FaultConfig::from(cfg), who.rank, static_cast<uint64_t>(s.run.seed));
  s.ckpt_cfg = CheckpointConfig::from(cfg);
  s.par = dist::ParallelConfig::from(cfg);
  s.prof = ProfileConfig::from(cfg);
  if (s.prof.trace) s.trace = std::make_shared<TraceLog>(who.rank);
  s.opts = std::move(opts);
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
  at::set_num_interop_threads(1);
  at::globalContext().setDeterministicAlgorithms(s.run.deterministic, /*warn_only=*/false);
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
  if (!s.opts.probe_from.empty()) {
    if (who.world_size != 1 || s.par.zero_stage != 0)
      cfg.fail(who.world_size != 1 ? "parallel.world_size" : "parallel.zero_stage",
               "a probe run needs one rank and zero_stage = 0");
    s.probe = std::make_unique<ProbeRecorder>();
    mk = recording(std::move(mk), s.probe.get());
  }
  // Outside the recorder: the probe records a kernel's inputs as the kernel receives them.
  mk.attention = s.faults.attention(std::move(mk.attention));
  s.model = workloads::GPT(s.model_cfg, std::move(mk));
  s.model->to(s.device);
  s.comm = std::make_unique<dist::Comm>(who, s.par, s.device);
  s.comm->set_nvtx(s.prof.nvtx);
  s.progress.in_flight = [comm = s.comm.get()] { return comm->in_flight(); };
  // The optimizer (AdamW with the [optim] hyperparameters) runs inside the sharding layer, on the
  // slices this rank owns.
  s.sharding = std::make_unique<variants::Sharding>(
      s.model, *s.comm, static_cast<int>(s.par.zero_stage), s.par.bucket_mb,
      [fn = s.kernels.optimizer, o = s.optim](torch::Tensor& p, const torch::Tensor& g,
                                              torch::Tensor& m, torch::Tensor& v,
                                              const torch::Tensor& decay, double lr, int64_t t) {
        fn(p, g, m, v, decay, plugin::AdamWStep{lr, t, o.beta1, o.beta2, o.eps, o.weight_decay});
      });
  s.window = std::make_unique<ProfileWindow>(s.prof, s.run.warmup_steps, s.run.steps, s.model,
                                             s.trace.get(), s.epoch, s.device);
  if (s.prof.nvtx) {
    s.nvtx_layers = std::make_unique<NvtxLayers>(static_cast<int>(s.model_cfg.n_layers));
    s.model->add_hooks(s.nvtx_layers.get());
  }
  if (s.run.cuda_graphs) s.graph = std::make_unique<StepGraph>();

  if (!s.opts.resume_from.empty()) {
    auto st = load_checkpoint(s.opts.resume_from, *s.sharding, who.rank);
    s.first_step = st.step + 1;
    s.opt_steps = st.opt_steps;
    s.precision->set_state(st.loss_scale, st.clean_steps);
    s.outliers.restore(st.outlier_losses, st.outlier_norms);
  }
}

Trainer::~Trainer() = default;
Progress& Trainer::progress() {
  return impl_->progress;
}
int64_t Trainer::first_step() const {
  return impl_->first_step;
}
int Trainer::rank() const {
  return impl_->who.rank;
}
int Trainer::world() const {
  return impl_->who.world_size;
}
std::optional<GpuInfo> Trainer::gpu() const {
  return gpu_info(impl_->device);
}

ProbeRecord Trainer::probe() {
  auto& s = *impl_;
  if (!s.probe) throw std::logic_error("Trainer::probe without TrainOptions::probe_from");
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(s.opts.probe_from)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("step-", 0) == 0 && n.find('.') == std::string::npos)
      dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());  // step-%08d: by step
  ProbeRecord out;
  out.buckets = kProbeBuckets;
  torch::NoGradGuard no_grad;
  for (const auto& dir : dirs) {
    const auto st = load_checkpoint(dir, *s.sharding, s.who.rank);
    s.faults.on_params(st.step, *s.sharding);  // the envelope's noise, if any (as in that step)
    for (int64_t b = 0; b < kProbeBatches; ++b) {
      StepRecord unused;
      const Batch batch = s.data(s.run.steps + 1 + b, 0, unused);  // (B, T) each
      s.probe->begin_forward(b);
      auto scope = s.precision->forward_scope();
      auto logits = s.model->forward(batch.x);  // (B, T, V)
      s.probe->add("logits", logits);
      s.probe->end_forward();
    }
    s.sharding->restore_params();
    std::vector<std::string> names;
    out.sketches.push_back(s.probe->take(&names));
    out.tensors = names;
    out.steps.push_back(st.step);
  }
  return out;
}

TrainOutcome Trainer::run(StepObserver& observer) {
  auto& s = *impl_;
  TrainOutcome out;
  out.loss_floor = s.source->loss_floor();
  out.env = describe_environment(s.run.device, s.run.threads, s.who.world_size);
  out.env["precision"] = s.precision->describe();
  out.env["data"] = s.source->describe();
  out.env["comm_backend"] = s.comm->backend_name();
  for (const auto& [k, v] : gpu_environment(s.device)) out.env[k] = v;
  out.env["profile_clock"] = s.window->clock();
  if (s.run.cuda_graphs)
    out.env["cuda_graphs"] = "forward and backward replayed as CUDA graphs from step 2";
  if (s.who.world_size > 1 && !s.comm->native_reduce_scatter())
    out.env["reduce_scatter"] =
        "emulated by one reduce per shard (this Gloo has no reduce_scatter)";

  const int64_t last_step =
      s.opts.stop_after > 0 ? std::min(s.opts.stop_after, s.run.steps) : s.run.steps;
  PhaseTimer timer(s.device);
  observer.on_start(s.first_step, last_step);
  reset_peak_tensor_bytes(s.device);
  reset_peak_rss();

  // An allocation failure (also inside a registry kernel) names the step; the allocator's state
  // goes to the log.
  auto out_of_memory = [&](const std::exception& e, const std::string& what) {
    if (!is_out_of_memory(e)) return false;
    out.failure = "out of memory at step " + std::to_string(out.failed_step) + ": " + what;
    std::cerr << "rank " << s.who.rank << ": " << out.failure << "\n"
              << "rank " << s.who.rank << ": " << allocator_summary(s.device) << "\n";
    return true;
  };
  // A single-process timing run of a compare pair takes turns with its peer; a peer that does
  // not answer within the watchdog's limit (or 10 minutes) is left behind.
  if (s.who.world_size == 1) s.turn = StepTurn::from_env(std::max(600.0, 2 * s.run.step_timeout_s));
  try {
    run_steps(s, out, observer, timer, last_step);
  } catch (const dist::CommError& e) {
    out.status = "lost_rank";
    out.failure = e.what();
    out.failed_step = s.progress.step.load();
  } catch (const registry::KernelError& e) {  // a kernel threw or returned a wrong shape
    out.status = "failed";
    out.failed_step = s.progress.step.load();
    if (!out_of_memory(e, e.what()))
      out.failure = std::string(e.what()) + " at step " + std::to_string(out.failed_step);
  } catch (const std::exception& e) {
    out.status = "failed";
    out.failed_step = s.progress.step.load();
    out.failure = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
    out_of_memory(e, out.failure);
  }
  s.end_ranges();
  if (!s.turn.ended().empty())  // turns ended before the last step: say why in the run's log
    std::cerr << "rank 0: the timing run's turns with its peer ended early: " << s.turn.ended()
              << "\n";
  s.progress.phase = "turn";
  s.turn.finish();
  s.progress.phase = "done";
  s.window->finish();
  out.top_ops = s.window->top_ops(25);
  out.top_kernels = s.window->top_kernels(25);
  if (const std::string b = variants::sdpa_backend_used(); !b.empty()) out.env["sdpa_backend"] = b;
  out.memory_per_rank = gather_memory(*s.comm, memory_stats(s.device), out.status == "ok");
  out.layer_costs = s.window->layer_costs();
  out.profiled_steps = s.window->profiled_steps();
  out.trace = s.trace;
  const auto mem = s.sharding->accounting();
  out.memory = MemoryAccounting{mem.param_bytes, mem.grad_bytes, mem.optimizer_state_bytes};
  out.peak_memory_bytes = peak_tensor_bytes(s.device);
  out.peak_rss_bytes = peak_rss_bytes();
  out.overflow_skips = s.precision->overflow_skips();
  return out;
}

// One step, as llm.c writes it: data, forward, backward, reduce (per micro-batch), then the
// optimizer step and the record. Phase boundaries are marked here; collectives that run inside a
// phase (ZeRO-3 gathers in the forward, the loss all-reduce) are moved to "comm".
void Trainer::run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step) {
  const int64_t A = s.data_cfg.grad_accum;
  auto close_phase = [&](const char* phase) {
    timer.mark(phase);
    timer.move(phase, "comm", s.comm->take_wait());
  };
  for (int64_t step = s.first_step; step <= last_step; ++step) {
    s.progress.phase = "turn";  // not watched: the peer's step (step_turn.h)
    const double turn_wait_ms = s.turn.wait();
    StepRecord rec = s.begin_step(step);
    rec.turn_wait_ms = turn_wait_ms;
    const bool graphed = s.graphed(step);
    timer.start();
    s.sharding->begin_step();
    s.faults.on_params(step, *s.sharding);
    torch::Tensor loss_sum =
        torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat64).device(s.device));
    for (int64_t micro = 0; micro < A; ++micro) {
      Batch batch = s.data(step, micro, rec);  // x, y: (B, T)
      timer.mark("data");
      Losses loss = s.forward(step, batch, graphed, rec);
      close_phase("forward");
      s.backward(loss.train, graphed);
      close_phase("backward");
      s.reduce(micro == A - 1);
      timer.mark("comm");
      s.comm->take_wait();  // already booked as the comm phase
      loss_sum += loss.reported.detach().to(torch::kFloat64);
    }

    auto [local_loss, global_loss] = s.mean_loss(loss_sum);
    s.measure_grads(step, rec);
    s.update(global_loss, rec);
    close_phase("optimizer");

    s.delay(step);
    rec.loss = global_loss.item<double>();  // host sync (the other: the gradient norm above)
    rec.local_loss = local_loss.item<double>();
    timer.mark("other");
    s.record(step, timer, rec);

    out.records.push_back(rec);
    observer.on_step(rec);
    if (!std::isfinite(rec.loss)) {
      out.status = "nonfinite";
      out.failed_step = step;
      out.failure =
          "non-finite loss at step " + std::to_string(step) + s.faults.nonfinite_note(step);
      break;
    }
    s.checkpoint(step);
    s.turn.pass();
  }
}

}  // namespace lockstep::train
