#include "harness/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "harness/train/checkpoint.h"
#include "harness/train/device.h"
#include "harness/train/hooks.h"
#include "harness/train/memory.h"
#include "harness/train/model_builder.h"
#include "harness/train/phase_timer.h"
#include "harness/train/stability.h"
#include "harness/util/clock.h"
#include "harness/vocab/checkpoint_config.h"
#include "variants/attention.h"

namespace lockstep::train {

struct Trainer::Impl {
  std::unique_ptr<RankModel> m;
  CheckpointConfig ckpt_cfg;
  TrainOptions opts;
  OutlierWindow outliers{50};
  Progress progress;
  StepHooks hooks;            // turn, faults, profile window, CUDA graph (harness/train/hooks.h)
  GraphHook* graph = nullptr;  // [run] cuda_graphs; owned by `hooks`
  int64_t first_step = 1;
  int64_t opt_steps = 0;  // updates applied (AdamW's t)

  // The pieces of one step, in the order run_steps calls them. Each names the phase it is in for
  // the watchdog (Progress::phase); run_steps books the time at the phase boundaries.
  void phase(const char* p) {
    progress.phase = p;
    hooks.on_phase(p);
  }

  // A new step's record: who, how many tokens, its learning rate, whether it is timed. Warmup
  // steps are never timed, nor the first warmup_steps steps of a resumed process (it is as cold as
  // a fresh one); the hooks untime more (the profile window, the CUDA graph's capture).
  void begin_step(int64_t step, StepRecord& rec) {
    progress.step = step;
    progress.step_started_ns = util::steady_now_ns();
    const auto& run = m->run;
    rec.step = step;
    rec.rank = m->who.rank;
    rec.tokens = m->data_cfg.batch_size * m->data_cfg.grad_accum * m->model_cfg.seq_len;
    const bool cold = first_step > 1 && step < first_step + run.warmup_steps;
    rec.timed = step > run.warmup_steps && !cold;
    rec.lr = m->optim.lr_at(step, run.steps);
    hooks.begin_step(step, rec);
  }

  // Data: this rank's rows of the global micro-batch; the first micro-batch's statistics go into
  // the record (the spike diagnosis reads them).
  Batch data(int64_t step, int64_t micro, StepRecord& rec) {
    phase("data");
    return m->batch(
        step, micro, [&](int64_t* tokens, int64_t n) { hooks.on_batch(step, tokens, n); },
        micro == 0 ? &rec : nullptr);
  }

  // Forward, up to the loss, under the precision variant's scope (or the CUDA graph's replay).
  Losses forward(int64_t step, const Batch& b, StepRecord& rec) {
    phase("forward");
    const bool graphed = graph && graph->graphed();
    hooks.forward_begin();
    Losses l = graphed ? graph->forward(step, b, *m, rec) : m->model_loss(b.x, b.y);
    hooks.forward_end();
    hooks.on_loss(step, l.reported, l.train);
    return l;
  }

  // Backward of the micro-batch's share of the step's loss (times the fp16 loss scale).
  void backward(const torch::Tensor& train_loss) {
    phase("backward");
    hooks.backward_begin();
    const double scale = m->precision->loss_scale() / static_cast<double>(m->data_cfg.grad_accum);
    if (graph && graph->graphed())
      graph->backward(scale);
    else
      (train_loss * scale).backward();
    hooks.backward_end();
  }

  // Gradient reduction across ranks (the sharding variant), once the step's last micro-batch has
  // added its gradients.
  void reduce(bool last_micro) {
    phase("comm");
    m->sharding->end_backward(last_micro);
  }

  // The reduced gradients, unscaled (fp16), then their global and per-unit norms, and the step's
  // mean loss over this rank's micro-batches and over the global batch (every rank holds an equal
  // share of it): one collective where the norms need one (ZeRO 2-3), a host sync. Returns the
  // (local, global) losses, device tensors.
  std::pair<torch::Tensor, torch::Tensor> measure(const torch::Tensor& loss_sum, int64_t step,
                                                  StepRecord& rec) {
    phase("optimizer");
    auto local_loss = loss_sum / static_cast<double>(m->data_cfg.grad_accum);
    const double inv_scale = 1.0 / m->precision->loss_scale();
    if (inv_scale != 1.0) m->sharding->scale_grads(inv_scale);
    hooks.on_grads(step, *m->sharding);
    auto global_loss = local_loss.clone();
    auto unit_sq = m->sharding->unit_grad_norms_sq(&global_loss);  // global_loss: summed
    global_loss /= static_cast<double>(m->who.world_size);
    double norm_sq = 0;
    for (double v : unit_sq) {
      norm_sq += v;
      rec.unit_grad_norms.push_back(std::sqrt(v));
    }
    rec.grad_norm = std::sqrt(norm_sq);
    if (!std::isfinite(rec.grad_norm)) rec.nonfinite_grads = m->sharding->count_nonfinite_grads();
    return {local_loss, global_loss};
  }

  // Optimizer step: skipped on an fp16 overflow or, under [stability] skip_outlier_z, an outlier
  // loss or gradient norm; otherwise gradients clipped to optim.clip_grad_norm and the update
  // applied on the slices this rank owns (Sharding::step runs the optimizer, AdamW).
  void update(const torch::Tensor& global_loss, StepRecord& rec) {
    const bool finite = std::isfinite(rec.grad_norm);
    rec.loss_scale = m->precision->loss_scale();
    bool skip = m->precision->update(finite);
    rec.overflow = !finite;
    const double z = m->stability.skip_outlier_z;
    if (!skip && z > 0 && outliers.is_outlier(global_loss.item<double>(), rec.grad_norm, z)) {
      skip = true;
      rec.skipped_outlier = true;
    }
    rec.skipped = skip;
    if (skip) return;
    const double clip = m->optim.clip_grad_norm;
    if (clip > 0 && rec.grad_norm > clip) m->sharding->scale_grads(clip / (rec.grad_norm + 1e-6));
    m->sharding->step(rec.lr, ++opt_steps);
  }

  // Closes the step: phase times, bytes sent and the collectives' stream time into the record;
  // the hooks see the closed step. What follows (observers, checkpoint) is not part of the step.
  void record(int64_t step, PhaseTimer& timer, StepRecord& rec) {
    rec.phase_ms = timer.finish(&rec.step_ms);
    rec.comm_bytes = m->comm->take_bytes();
    rec.comm_stream_ms = m->comm->take_stream_ms();
    hooks.end_step(step, timer, rec);
    progress.phase = "checkpoint";
  }

  // A checkpoint every ckpt_cfg.every steps (none after the last step). The save is not part of
  // the step (step_ms leaves it out): the watchdog times it on its own clock, against
  // step_timeout_s only.
  void checkpoint(int64_t step) {
    if (ckpt_cfg.every <= 0 || step % ckpt_cfg.every != 0 || step >= m->run.steps) return;
    progress.step_started_ns = util::steady_now_ns();
    const auto scale = m->precision->state();
    CheckpointState st{step,         opt_steps,         scale.first,
                       scale.second, outliers.losses(), outliers.norms()};
    save_checkpoint(opts.out_dir / "checkpoints", step, st, *m->sharding, *m->comm, ckpt_cfg.keep);
  }
};

Trainer::Trainer(const config::Config& cfg, const dist::RankInfo& who, TrainOptions opts)
    : impl_(std::make_unique<Impl>()) {
  auto& s = *impl_;
  s.m = build_rank_model(cfg, who);
  s.outliers = OutlierWindow(static_cast<size_t>(s.m->stability.outlier_window));
  s.ckpt_cfg = CheckpointConfig::from(cfg);
  s.opts = std::move(opts);
  s.progress.in_flight = [comm = s.m->comm.get()] { return comm->in_flight(); };

  // The hooks, in the order they are called. Each rank of a compare timing pair's run takes turns
  // with the same rank of its peer (its launcher handed it its socket); one that does not answer
  // within the watchdog's limit (or 10 minutes) is left behind.
  StepTurn turn = StepTurn::from_env(std::max(600.0, 2 * s.m->run.step_timeout_s));
  s.hooks.add(std::make_unique<TurnHook>(std::move(turn), s.progress));
  s.hooks.add(std::make_unique<FaultHook>(s.m->faults, s.progress));
  s.hooks.add(std::make_unique<ProfileHook>(*s.m));
  if (s.m->run.cuda_graphs) {
    auto g = std::make_unique<GraphHook>(s.hooks);
    s.graph = g.get();
    s.hooks.add(std::move(g));
  }

  if (!s.opts.resume_from.empty()) {
    auto st = load_checkpoint(s.opts.resume_from, *s.m->sharding, who.rank);
    s.first_step = st.step + 1;
    s.opt_steps = st.opt_steps;
    s.m->precision->set_state(st.loss_scale, st.clean_steps);
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
  return impl_->m->who.rank;
}
int Trainer::world() const {
  return impl_->m->who.world_size;
}
std::optional<GpuInfo> Trainer::gpu() const {
  return gpu_info(impl_->m->device);
}

TrainOutcome Trainer::run(StepObserver& observer) {
  auto& s = *impl_;
  auto& m = *s.m;
  TrainOutcome out;
  out.loss_floor = m.source->loss_floor();
  out.env = describe_environment(m.run.device, m.run.threads, m.who.world_size);
  out.env["precision"] = m.precision->describe();
  out.env["data"] = m.source->describe();
  out.env["comm_backend"] = m.comm->backend_name();
  for (const auto& [k, v] : gpu_environment(m.device)) out.env[k] = v;
  if (m.run.cuda_graphs)
    out.env["cuda_graphs"] = "forward and backward replayed as CUDA graphs from step 2";
  if (m.who.world_size > 1 && !m.comm->native_reduce_scatter())
    out.env["reduce_scatter"] =
        "emulated by an all-reduce, each rank keeping its shard (this Gloo has no reduce_scatter)";

  const int64_t last_step =
      s.opts.stop_after > 0 ? std::min(s.opts.stop_after, m.run.steps) : m.run.steps;
  PhaseTimer timer(m.device);
  observer.on_start(s.first_step, last_step);
  reset_peak_tensor_bytes(m.device);
  reset_peak_rss();

  // An allocation failure (also inside a registry kernel) names the step; the allocator's state
  // goes to the log.
  auto out_of_memory = [&](const std::exception& e, const std::string& what) {
    if (!is_out_of_memory(e)) return false;
    out.failure = "out of memory at step " + std::to_string(out.failed_step) + ": " + what;
    std::cerr << "rank " << m.who.rank << ": " << out.failure << "\n"
              << "rank " << m.who.rank << ": " << allocator_summary(m.device) << "\n";
    return true;
  };
  try {
    run_steps(s, out, observer, timer, last_step);
  } catch (const dist::CommError& e) {
    out.status = RunStatus::LostRank;
    out.failure = e.what();
    out.failed_step = s.progress.step.load();
  } catch (const registry::KernelError& e) {  // a kernel threw or returned a wrong shape
    out.status = RunStatus::Failed;
    out.failed_step = s.progress.step.load();
    if (!out_of_memory(e, e.what()))
      out.failure = std::string(e.what()) + " at step " + std::to_string(out.failed_step);
  } catch (const std::exception& e) {
    out.status = RunStatus::Failed;
    out.failed_step = s.progress.step.load();
    out.failure = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
    out_of_memory(e, out.failure);
  }
  s.hooks.finish(out);
  if (const std::string b = variants::sdpa_backend_used(); !b.empty()) out.env["sdpa_backend"] = b;
  if (!m.comm->loop_policy().empty())  // why: harness/dist/comm.cpp
    out.env["gloo_device_loop"] = m.comm->loop_policy();
  out.memory_per_rank =
      gather_memory(*m.comm, memory_stats(m.device), out.status == RunStatus::Ok);
  const auto mem = m.sharding->accounting();
  out.memory = MemoryAccounting{mem.param_bytes, mem.grad_bytes, mem.optimizer_state_bytes};
  out.peak_memory_bytes = peak_tensor_bytes(m.device);
  out.peak_rss_bytes = peak_rss_bytes();
  out.overflow_skips = m.precision->overflow_skips();
  return out;
}

// One step, as llm.c writes it: data, forward, backward, reduce (per micro-batch), then the
// optimizer step and the record. Phase boundaries are marked here; collectives that run inside a
// phase (ZeRO-3 gathers in the forward, the loss all-reduce) are moved to "comm".
void Trainer::run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step) {
  auto& m = *s.m;
  const int64_t A = m.data_cfg.grad_accum;
  auto close_phase = [&](const char* phase) {
    timer.mark(phase);
    timer.move(phase, "comm", m.comm->take_wait());
  };
  for (int64_t step = s.first_step; step <= last_step; ++step) {
    StepRecord rec;
    s.hooks.before_step(step, rec);  // the turn: before the clock starts
    s.begin_step(step, rec);
    timer.start();
    m.sharding->begin_step();
    s.hooks.on_weights(step, *m.sharding);
    torch::Tensor loss_sum =
        torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat64).device(m.device));
    for (int64_t micro = 0; micro < A; ++micro) {
      Batch batch = s.data(step, micro, rec);  // x, y: (B, T)
      timer.mark("data");
      Losses loss = s.forward(step, batch, rec);
      close_phase("forward");
      s.backward(loss.train);
      close_phase("backward");
      s.reduce(micro == A - 1);
      timer.mark("comm");
      m.comm->take_wait();  // already booked as the comm phase
      loss_sum += loss.reported.detach().to(torch::kFloat64);
    }

    auto [local_loss, global_loss] = s.measure(loss_sum, step, rec);
    s.update(global_loss, rec);
    close_phase("optimizer");

    s.phase("other");
    s.hooks.before_read(step);                // injected delays: part of the step
    rec.loss = global_loss.item<double>();    // host sync (the other: the gradient norm above)
    rec.local_loss = local_loss.item<double>();
    timer.mark("other");
    s.record(step, timer, rec);

    out.records.push_back(rec);
    observer.on_step(rec);
    if (!std::isfinite(rec.loss)) {
      out.status = RunStatus::Nonfinite;
      out.failed_step = step;
      out.failure = "non-finite loss at step " + std::to_string(step) + s.hooks.nonfinite_note(step);
      break;
    }
    s.checkpoint(step);
    s.hooks.after_step(step);
  }
}

}  // namespace lockstep::train
