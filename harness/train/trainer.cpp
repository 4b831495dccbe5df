#include "harness/train/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <thread>

#include "harness/dist/comm.h"
#include "harness/run_config.h"
#include "harness/train/checkpoint.h"
#include "harness/train/device.h"
#include "harness/train/faults.h"
#include "harness/train/memory.h"
#include "harness/train/nvtx_layers.h"
#include "harness/train/optim_config.h"
#include "harness/train/phase_timer.h"
#include "harness/train/profile_config.h"
#include "harness/train/profiler.h"
#include "harness/train/stability.h"
#include "harness/train/step_graph.h"
#include "harness/train/trace.h"
#include "variants/attention.h"
#include "variants/precision.h"
#include "variants/sharding.h"
#include "workloads/data.h"
#include "workloads/gpt.h"

namespace lockstep::train {
namespace fs = std::filesystem;

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Extra work, not idleness: a sleeping core lets the host shift time back to the next step (on this
// VM a 10% sleep measured as a 0-3% slowdown), a busy core does not.
void spin_ms(double ms) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
  while (std::chrono::steady_clock::now() < until) {
  }
}

void sleep_ms(double ms) {
  if (ms > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
}

}  // namespace

struct Trainer::Impl {
  RunConfig run;
  workloads::ModelConfig model_cfg;
  workloads::DataConfig data_cfg;
  OptimConfig optim;
  StabilityConfig stability;
  OutlierWindow outliers{50};
  FaultConfig faults;
  CheckpointConfig ckpt_cfg;
  variants::ParallelConfig par;
  TrainOptions opts;
  torch::Device device{torch::kCPU};
  dist::RankInfo who;
  std::unique_ptr<dist::Comm> comm;
  std::unique_ptr<workloads::TokenSource> source;
  workloads::BatchPlan plan;
  workloads::GPT model{nullptr};
  std::unique_ptr<variants::Precision> precision;
  std::unique_ptr<variants::Sharding> sharding;
  Progress progress;
  ProfileConfig prof;
  OpProfiler ops;
  std::unique_ptr<LayerTimer> layers;
  std::unique_ptr<NvtxLayers> nvtx_layers;  // [profile] nvtx
  std::unique_ptr<compat::NvtxRange> step_range, phase_range;
  std::unique_ptr<StepGraph> graph;  // [run] cuda_graphs
  std::shared_ptr<TraceLog> trace;
  std::chrono::steady_clock::time_point epoch = std::chrono::steady_clock::now();
  bool profiling = false;
  bool profiler_warming = false;
  size_t trace_mark = 0;  // trace size when the profiler's warm-up step began
  int64_t profiled = 0;
  int64_t first_step = 1;
  int64_t opt_steps = 0;  // updates applied (AdamW's t)

  // Where the step is (the watchdog reads it); with [profile] nvtx, an NVTX range per phase.
  void phase(const char* p) {
    progress.phase = p;
    if (!prof.nvtx) return;
    phase_range.reset();
    phase_range = std::make_unique<compat::NvtxRange>(true, p);
  }

  // One micro-step's forward: (reported cross-entropy, the loss that is differentiated).
  std::pair<torch::Tensor, torch::Tensor> forward_loss(const torch::Tensor& x,
                                                       const torch::Tensor& y) {
    auto scope = precision->forward_scope();
    auto logits =
        model->forward(x).to(torch::kFloat32).view({-1, model_cfg.vocab_size});  // (B*T, V)
    auto loss = torch::nn::functional::cross_entropy(logits, y.reshape({-1}));
    auto train_loss = stability.z_loss > 0
                          ? loss + stability.z_loss * torch::logsumexp(logits, -1).pow(2).mean()
                          : loss;
    return {loss, train_loss};
  }

  // Ends a profiler warm-up: its counts and trace events are dropped (callbacks stay as they are).
  void discard_profiler_warmup() {
    ops.reset();
    layers->reset();
    if (trace) trace->drop_since(trace_mark, "op");
    profiler_warming = false;
  }

  torch::Tensor make_batch(int64_t step, int64_t micro, workloads::BatchStats* stats) {
    const int64_t B = plan.local_batch(), L = model_cfg.seq_len + 1;
    // On CUDA the batch is built in pinned memory and copied without a host sync (a copy from
    // pageable memory would first wait for the stream); the allocator keeps the buffer until then.
    auto buf = torch::empty(
        {B, L},
        torch::TensorOptions().dtype(torch::kInt64).pinned_memory(device.is_cuda()));  // (B, T+1)
    int64_t* p = buf.data_ptr<int64_t>();
    for (int64_t row = 0; row < B; ++row)
      source->sample(plan.index(step, micro, who.rank, row), p + row * L, L);
    if (faults.corrupt_batch_at == step) buf.fill_(p[0]);  // a degenerate batch: one token repeated
    if (stats) *stats = workloads::batch_stats(p, static_cast<size_t>(B * L));
    return buf.to(device, /*non_blocking=*/device.is_cuda());
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
  s.faults = FaultConfig::from(cfg);
  s.ckpt_cfg = CheckpointConfig::from(cfg);
  s.par = variants::ParallelConfig::from(cfg);
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

  s.model =
      workloads::GPT(s.model_cfg, variants::make_attention(variants::AttentionConfig::from(cfg)));
  s.model->to(s.device);
  s.comm = std::make_unique<dist::Comm>(who, s.par, s.device);
  s.comm->set_nvtx(s.prof.nvtx);
  s.progress.in_flight = [comm = s.comm.get()] { return comm->in_flight(); };
  s.sharding = std::make_unique<variants::Sharding>(
      s.model, *s.comm, static_cast<int>(s.par.zero_stage), s.par.bucket_mb, s.optim);
  s.layers = std::make_unique<LayerTimer>(static_cast<int>(s.model_cfg.n_layers), s.device);
  s.ops.set_device(s.device);
  if (s.prof.nvtx) {
    s.nvtx_layers = std::make_unique<NvtxLayers>(static_cast<int>(s.model_cfg.n_layers));
    s.model->add_hooks(s.nvtx_layers.get());
  }
  if (s.run.cuda_graphs) s.graph = std::make_unique<StepGraph>();
  const auto window = static_cast<size_t>(std::min(s.prof.window, s.run.steps));
  s.layers->expect_steps(window);
  s.ops.expect_steps(window);

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

TrainOutcome Trainer::run(StepObserver& observer) {
  auto& s = *impl_;
  TrainOutcome out;
  out.loss_floor = s.source->loss_floor();
  out.env = describe_environment(s.run.device, s.run.threads, s.who.world_size);
  out.env["precision"] = s.precision->describe();
  out.env["data"] = s.source->describe();
  out.env["comm_backend"] = s.comm->backend_name();
  for (const auto& [k, v] : gpu_environment(s.device)) out.env[k] = v;
  out.env["profile_clock"] = s.ops.clock();
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

  try {
    run_steps(s, out, observer, timer, last_step);
  } catch (const dist::CommError& e) {
    out.status = "lost_rank";
    out.failure = e.what();
    out.failed_step = s.progress.step.load();
  } catch (const std::exception& e) {
    out.status = "failed";
    out.failure = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
    out.failed_step = s.progress.step.load();
    if (is_out_of_memory(e)) {
      out.failure = "out of memory at step " + std::to_string(out.failed_step) + ": " + out.failure;
      std::cerr << "rank " << s.who.rank << ": " << out.failure << "\n"
                << "rank " << s.who.rank << ": " << allocator_summary(s.device) << "\n";
    }
  }
  s.phase_range.reset();
  s.step_range.reset();
  s.progress.phase = "done";
  if (s.profiling) {
    s.ops.stop();
    s.model->remove_hooks(s.layers.get());
    s.profiling = false;
  }
  if (s.profiler_warming) {  // the run ended before its window: the warm-up's numbers go too
    s.ops.stop();
    s.model->remove_hooks(s.layers.get());
    s.discard_profiler_warmup();
  }
  out.top_ops = s.ops.top(25);
  out.top_kernels = s.ops.top_kernels(25);
  if (const std::string b = variants::sdpa_backend_used(); !b.empty()) out.env["sdpa_backend"] = b;
  out.memory_per_rank = gather_memory(*s.comm, memory_stats(s.device), out.status == "ok");
  out.layer_costs = s.layers->costs();
  out.profiled_steps = s.profiled;
  out.trace = s.trace;
  out.memory = s.sharding->accounting();
  out.peak_memory_bytes = peak_tensor_bytes(s.device);
  out.peak_rss_bytes = peak_rss_bytes();
  out.overflow_skips = s.precision->overflow_skips();
  return out;
}

void Trainer::run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step) {
  const int64_t A = s.data_cfg.grad_accum;
  const int64_t tokens_per_step = s.data_cfg.batch_size * A * s.model_cfg.seq_len;
  const int64_t prof_start = s.prof.first_step(s.run.warmup_steps);
  for (int64_t step = s.first_step; step <= last_step; ++step) {
    s.progress.step = step;
    s.progress.step_started_ns = now_ns();
    if (s.prof.nvtx)
      s.step_range =
          std::make_unique<compat::NvtxRange>(true, ("step " + std::to_string(step)).c_str());
    StepRecord rec;
    rec.step = step;
    rec.rank = s.who.rank;
    rec.tokens = tokens_per_step;
    // Warmup steps are never timed, nor are the profile window's steps (also when a resume lands
    // inside the window and the profiler never starts), nor the first warmup_steps steps of a
    // resumed process: it is as cold as a fresh one.
    const bool cold = s.first_step > 1 && step < s.first_step + s.run.warmup_steps;
    rec.timed = step > s.run.warmup_steps && !s.prof.covers(step, s.run.warmup_steps) && !cold;
    rec.lr = s.optim.lr_at(step, s.run.steps) * (s.faults.lr_spike_at == step ? 30.0 : 1.0);

    if (s.faults.kill_rank == s.who.rank && s.faults.kill_at == step) ::raise(SIGKILL);

    // Profiler warm-up (as torch.profiler's schedule has): when the step before the window is an
    // untimed warmup step, it runs with the callbacks on and its numbers are dropped. The
    // profiler's own first allocations (one per operator name) then land before the window;
    // inside it they split heap chunks the activations reuse, and the first profiled step
    // faulted in fresh memory (GELU backward measured at 20 ms instead of 2).
    if (s.prof.window > 0 && step == prof_start - 1 && step <= s.run.warmup_steps) {
      s.trace_mark = s.trace ? s.trace->size() : 0;
      s.ops.start(s.trace.get(), s.epoch);
      s.model->add_hooks(s.layers.get());
      s.profiler_warming = true;
    }
    if (s.prof.window > 0 && step == prof_start && !s.profiling) {
      if (s.profiler_warming) {
        s.discard_profiler_warmup();
      } else {
        s.ops.start(s.trace.get(), s.epoch);
        s.model->add_hooks(s.layers.get());
      }
      s.profiling = true;
    }
    if (s.profiling) rec.timed = false;
    const bool time_layers = s.profiling || s.profiler_warming;  // a warm-up runs the hooks too
    // CUDA graphs from step 2 (shapes static, kernels and allocator warm), except where hooks,
    // host clocks or an injected fault must run (profiled and warm-up steps, faults.nonfinite_at).
    const bool graphed = s.graph && step >= 2 && !time_layers && s.faults.nonfinite_at != step;
    timer.start();
    s.sharding->begin_step();
    torch::Tensor loss_sum =
        torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat64).device(s.device));
    for (int64_t micro = 0; micro < A; ++micro) {
      s.phase("data");
      workloads::BatchStats bstats;
      auto batch = s.make_batch(step, micro, micro == 0 ? &bstats : nullptr);  // (B, T+1)
      if (micro == 0)
        rec.batch_entropy = bstats.token_entropy, rec.batch_repeat_share = bstats.repeat_share,
        rec.batch_hash = bstats.hash;
      auto x = batch.narrow(1, 0, s.model_cfg.seq_len);  // (B, T)
      auto y = batch.narrow(1, 1, s.model_cfg.seq_len);  // (B, T)
      timer.mark("data");

      s.phase("forward");
      torch::Tensor loss, train_loss;  // the reported cross-entropy; what is differentiated
      if (graphed && !s.graph->captured()) {
        try {
          s.graph->capture(x, y, [&s](const torch::Tensor& xs, const torch::Tensor& ys) {
            return s.forward_loss(xs, ys);
          });
        } catch (const std::exception& e) {
          throw std::runtime_error("run.cuda_graphs: capturing step " + std::to_string(step) +
                                   " failed: " + e.what());
        }
        rec.timed = false;  // the capture step is never timed
      }
      if (time_layers) s.layers->forward_begin();
      if (graphed)
        loss = train_loss = s.graph->forward(x, y);  // static: read below, before the next replay
      else
        std::tie(loss, train_loss) = s.forward_loss(x, y);
      if (time_layers) s.layers->forward_end();
      if (s.faults.nonfinite_at == step)
        loss = loss * std::numeric_limits<float>::quiet_NaN(), train_loss = loss;
      timer.mark("forward");
      timer.move("forward", "comm", s.comm->take_wait());

      s.phase("backward");
      if (time_layers) s.layers->backward_begin();
      if (graphed)
        s.graph->backward(s.precision->loss_scale() / static_cast<double>(A));
      else
        (train_loss * (s.precision->loss_scale() / static_cast<double>(A))).backward();
      if (time_layers) s.layers->backward_end();
      timer.mark("backward");
      timer.move("backward", "comm", s.comm->take_wait());

      s.phase("comm");
      s.sharding->end_backward(micro == A - 1);
      timer.mark("comm");
      s.comm->take_wait();  // already booked as the comm phase
      loss_sum += loss.detach().to(torch::kFloat64);
    }

    s.phase("optimizer");
    // Global mean loss: every rank holds an equal share of the global batch.
    auto local_loss = loss_sum / static_cast<double>(A);
    auto global_loss = local_loss.clone();
    s.comm->allreduce_sum(global_loss, "all_reduce(loss)");
    global_loss /= static_cast<double>(s.who.world_size);

    const double inv_scale = 1.0 / s.precision->loss_scale();
    if (inv_scale != 1.0) s.sharding->scale_grads(inv_scale);
    if (s.faults.grad_blowup_at == step) {
      // An exploding gradient: noise far above the gradient's own scale, in a random direction.
      auto sq = s.sharding->unit_grad_norms_sq();
      double norm = 0;
      for (double v : sq) norm += v;
      const double rms = std::sqrt(norm / static_cast<double>(s.sharding->padded_numel()));
      s.sharding->perturb_grads(1e3 * std::max(rms, 1e-8),
                                static_cast<uint64_t>(s.run.seed) + static_cast<uint64_t>(step));
    }
    auto unit_sq = s.sharding->unit_grad_norms_sq();
    double norm_sq = 0;
    for (double v : unit_sq) {
      norm_sq += v;
      rec.unit_grad_norms.push_back(std::sqrt(v));
    }
    rec.grad_norm = std::sqrt(norm_sq);
    const bool finite = std::isfinite(rec.grad_norm);
    if (!finite) rec.nonfinite_grads = s.sharding->count_nonfinite_grads();
    rec.loss_scale = s.precision->loss_scale();
    bool skip = s.precision->update(finite);
    rec.overflow = !finite;
    if (!skip && s.stability.skip_outlier_z > 0 &&
        s.outliers.is_outlier(global_loss.item<double>(), rec.grad_norm,
                              s.stability.skip_outlier_z)) {
      skip = true;
      rec.skipped_outlier = true;
    }
    rec.skipped = skip;
    if (!skip) {
      if (s.optim.clip_grad_norm > 0 && rec.grad_norm > s.optim.clip_grad_norm)
        s.sharding->scale_grads(s.optim.clip_grad_norm / (rec.grad_norm + 1e-6));
      s.sharding->step(rec.lr, ++s.opt_steps);
    }
    timer.mark("optimizer");
    timer.move("optimizer", "comm", s.comm->take_wait());

    // Injected delays: part of the step, booked as "other".
    s.phase("other");
    if (s.faults.stalls_at(step)) sleep_ms(static_cast<double>(s.faults.stall_ms));
    if (s.faults.stall_rank == s.who.rank && s.faults.stall_at == step)
      sleep_ms(static_cast<double>(s.faults.stall_ms));
    if (s.faults.slowdown_pct > 0) {
      double so_far = std::chrono::duration<double, std::milli>(
                          std::chrono::nanoseconds(now_ns() - s.progress.step_started_ns))
                          .count();
      spin_ms(so_far * s.faults.slowdown_pct / 100.0);
    }
    rec.loss = global_loss.item<double>();  // host sync (the other: the gradient norm above)
    rec.local_loss = local_loss.item<double>();
    timer.mark("other");
    rec.phase_ms = timer.finish(&rec.step_ms);
    rec.comm_bytes = s.comm->take_bytes();
    rec.comm_stream_ms = s.comm->take_stream_ms();
    if (s.trace) {
      auto us = [&](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double, std::micro>(t - s.epoch).count();
      };
      auto spans = timer.host_spans();
      if (!spans.empty())
        s.trace->add(TraceEvent{"step " + std::to_string(step), "step", 'X',
                                us(spans.front().start),
                                us(spans.back().end) - us(spans.front().start), 0});
      for (const auto& sp : spans)
        s.trace->add(
            TraceEvent{sp.phase, "phase", 'X', us(sp.start), us(sp.end) - us(sp.start), 0});
    }
    if (s.profiling) {
      s.layers->step_done();
      s.ops.step_done();
      if (++s.profiled >= s.prof.window) {
        s.ops.stop();
        s.model->remove_hooks(s.layers.get());
        s.profiling = false;
      }
    }
    s.phase_range.reset();
    s.step_range.reset();
    s.progress.phase = "checkpoint";

    out.records.push_back(rec);
    observer.on_step(rec);
    if (!std::isfinite(rec.loss)) {
      out.status = "nonfinite";
      out.failed_step = step;
      out.failure = "non-finite loss at step " + std::to_string(step) +
                    (s.faults.nonfinite_at == step ? " (injected: faults.nonfinite_at)" : "");
      break;
    }
    if (s.ckpt_cfg.every > 0 && step % s.ckpt_cfg.every == 0 && step < s.run.steps) {
      // The save is not part of the step (step_ms leaves it out): the watchdog times it on its
      // own clock, against step_timeout_s only.
      s.progress.step_started_ns = now_ns();
      CheckpointState st{step,
                         s.opt_steps,
                         s.precision->state().first,
                         s.precision->state().second,
                         s.outliers.losses(),
                         s.outliers.norms()};
      save_checkpoint(s.opts.out_dir / "checkpoints", step, st, *s.sharding, *s.comm,
                      s.ckpt_cfg.keep);
    }
  }
}

}  // namespace lockstep::train
