#include "harness/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <iostream>

#include "harness/train/checkpoint.h"
#include "harness/train/device.h"
#include "harness/train/hooks.h"
#include "harness/train/memory.h"
#include "harness/train/micro_step.h"
#include "harness/train/model_builder.h"
#include "harness/train/phase_timer.h"
#include "harness/train/profile/host_work.h"
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
  StepHooks hooks;                   // the turn, faults, the profile window (hooks.h)
  std::unique_ptr<MicroStep> micro;  // eagerly or as CUDA graphs (micro_step.h)
  PhaseTimer* timer = nullptr;       // run()'s
  int64_t first_step = 1;
  int64_t opt_steps = 0;  // updates applied (AdamW's t)

  // One phase of the step, named once: on entry the watchdog's phase and the hooks' Begin; on
  // exit the hooks' End, then the phase timer's boundary (collectives waited for inside the phase
  // are booked as comm). Unwinding from an exception calls no hook: the run is failing.
  class Scope {
   public:
    Scope(Impl& s, Phase p, StepView& v) : s_(s), p_(p), v_(v) {
      s.progress.phase = p;
      s.hooks.on_phase(p, Edge::Begin, v);
    }
    ~Scope() noexcept(false) {
      if (std::uncaught_exceptions() > unwinding_) return;
      s_.hooks.on_phase(p_, Edge::End, v_);
      if (in_step(p_)) s_.close(p_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Impl& s_;
    Phase p_;
    StepView& v_;
    int unwinding_ = std::uncaught_exceptions();
  };

  void close(Phase p) {
    timer->mark(p);
    dist::WaitTime waited = m->comm->take_wait();
    if (p != Phase::Comm) timer->move(p, Phase::Comm, std::move(waited));
  }

  // Whether the step's time counts: never a warm-up step, nor the first warmup_steps steps of a
  // resumed process (as cold as a fresh one), nor a step a hook untimes (the profile window), nor
  // the step that captures the CUDA graphs. Decided here only.
  bool timed(int64_t step, const StepNeeds& needs, bool captures) const {
    const int64_t warmup = m->run.warmup_steps;
    const bool cold = first_step > 1 && step < first_step + warmup;
    return step > warmup && !cold && !needs.untimed && !captures;
  }

  // A new step: its record (who, how many tokens, its learning rate), the hooks' before_step (the
  // turn waits there, before the clock), whether it is timed; then the clock starts and the
  // gradients are zeroed.
  StepView begin_step(int64_t step, StepRecord& rec) {
    rec.step = step;
    rec.rank = m->who.rank;
    rec.tokens = m->data_cfg.batch_size * m->data_cfg.grad_accum * m->model_cfg.seq_len;
    rec.lr = m->optim.lr_at(step, m->run.steps);
    hooks.before_step(step, rec);
    const StepNeeds needs = hooks.needs(step);
    rec.timed = timed(step, needs, micro->begin_step(step, needs.eager));
    progress.step = step;
    progress.step_started_ns = util::steady_now_ns();
    timer->start();
    m->sharding->begin_step();
    StepView v;
    v.step = step;
    v.started_ns = progress.step_started_ns;
    v.rec = &rec;
    v.sharding = m->sharding.get();
    return v;
  }

  // Data: this rank's rows of the global micro-batch, on the host. The hooks see them at the
  // phase's end, before anything reads them.
  void data(StepView& v) {
    Scope phase(*this, Phase::Data, v);
    v.tokens = m->host_tokens(v.step, v.micro);  // (B, T+1)
  }

  // Forward: the tokens onto the device (the first micro-batch's statistics into the record: the
  // spike diagnosis reads them), then the model to the loss, eagerly or as a graph's replay. The
  // hooks may replace the losses at the phase's end (faults.nonfinite_at).
  Losses forward(StepView& v) {
    Losses l;
    {
      Scope phase(*this, Phase::Forward, v);
      const Batch b = m->to_device(v.tokens, v.micro == 0 ? v.rec : nullptr);  // x, y: (B, T)
      l = micro->forward(b);
      v.reported = &l.reported;
      v.train = &l.train;
    }
    v.reported = v.train = nullptr;
    return l;
  }

  // Backward of the micro-batch's share of the step's loss (times the fp16 loss scale).
  void backward(StepView& v, const torch::Tensor& train_loss) {
    Scope phase(*this, Phase::Backward, v);
    micro->backward(train_loss,
                    m->precision->loss_scale() / static_cast<double>(m->data_cfg.grad_accum));
  }

  // Gradient reduction across ranks (the sharding variant), once the step's last micro-batch has
  // added its gradients.
  void reduce(StepView& v, bool last_micro) {
    Scope phase(*this, Phase::Comm, v);
    m->sharding->end_backward(last_micro);
  }

  // The update. The gradients are unscaled first (fp16; booked to this phase), so the hooks see
  // the reduced, unscaled gradients at its start. Then the step's mean loss over this rank's
  // micro-batches and over the global batch (every rank holds an equal share of it), the
  // gradients' global and per-unit norms (one collective where the norms need one, ZeRO 2-3; a
  // host sync), and the optimizer step: skipped on an fp16 overflow or, under [stability]
  // skip_outlier_z, an outlier loss or gradient norm; otherwise gradients clipped to
  // optim.clip_grad_norm and AdamW applied on the slices this rank owns (Sharding::step).
  // Returns the (local, global) losses, device tensors.
  std::pair<torch::Tensor, torch::Tensor> update(StepView& v, const torch::Tensor& loss_sum) {
    const double inv_scale = 1.0 / m->precision->loss_scale();
    if (inv_scale != 1.0) m->sharding->scale_grads(inv_scale);
    Scope phase(*this, Phase::Optimizer, v);
    StepRecord& rec = *v.rec;
    auto local_loss = loss_sum / static_cast<double>(m->data_cfg.grad_accum);
    auto global_loss = local_loss.clone();
    auto unit_sq = m->sharding->unit_grad_norms_sq(&global_loss);  // global_loss: summed
    global_loss /= static_cast<double>(m->who.world_size);
    double norm_sq = 0;
    for (double sq : unit_sq) {
      norm_sq += sq;
      rec.unit_grad_norms.push_back(std::sqrt(sq));
    }
    rec.grad_norm = std::sqrt(norm_sq);
    if (!std::isfinite(rec.grad_norm)) rec.nonfinite_grads = m->sharding->count_nonfinite_grads();

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
    if (skip) return {local_loss, global_loss};
    const double clip = m->optim.clip_grad_norm;
    if (clip > 0 && rec.grad_norm > clip) m->sharding->scale_grads(clip / (rec.grad_norm + 1e-6));
    m->sharding->step(rec.lr, ++opt_steps);
    return {local_loss, global_loss};
  }

  // The rest of the step: the hooks' injected delays at its start, then the losses read (a host
  // sync; the other one is the gradient norm).
  void read(StepView& v, const torch::Tensor& local_loss, const torch::Tensor& global_loss) {
    Scope phase(*this, Phase::Other, v);
    v.rec->loss = global_loss.item<double>();
    v.rec->local_loss = local_loss.item<double>();
  }

  // Closes the step: phase times, bytes sent and the collectives' stream time into the record;
  // the hooks see the closed step.
  void record(StepView& v) {
    StepRecord& rec = *v.rec;
    rec.phase_ms = timer->finish(&rec.step_ms);
    rec.comm_bytes = m->comm->take_bytes();
    rec.comm_stream_ms = m->comm->take_stream_ms();
    hooks.after_step(v.step, *timer, rec);
  }

  // Not part of the step (step_ms leaves it out): the observers, then a checkpoint every
  // ckpt_cfg.every steps (none after the last step, nor after a non-finite loss), which the
  // watchdog times on its own clock, against step_timeout_s only. The turn passes at the end.
  void after_step(StepView& v, StepObserver& observer, bool finite) {
    Scope phase(*this, Phase::Checkpoint, v);
    observer.on_step(*v.rec);
    const int64_t step = v.step;
    if (!finite || ckpt_cfg.every <= 0 || step % ckpt_cfg.every != 0 || step >= m->run.steps)
      return;
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
  BuildOptions trained;
  trained.trains = true;
  s.m = build_rank_model(cfg, who, trained);
  s.outliers = OutlierWindow(static_cast<size_t>(s.m->stability.outlier_window));
  s.ckpt_cfg = CheckpointConfig::from(cfg);
  s.opts = std::move(opts);
  s.progress.in_flight = [comm = s.m->comm.get()] { return comm->in_flight(); };

  // The hooks, in the order they are called. Each rank of a compare timing pair's run takes turns
  // with the same rank of its peer (its launcher handed it its socket); one that does not answer
  // within the watchdog's limit (or 10 minutes) is left behind.
  StepTurn turn = StepTurn::from_env(std::max(600.0, 2 * s.m->run.step_timeout_s));
  s.hooks.add(std::make_unique<TurnHook>(std::move(turn), s.progress));
  s.hooks.add(s.m->faults);
  s.hooks.add(std::make_unique<ProfileHook>(*s.m));
  // The host work is counted over the profile window's steps (untimed already).
  if (const auto& p = s.m->prof; p.host_work && p.window > 0) {
    const int64_t first = p.first_step(s.m->run.warmup_steps);
    s.hooks.add(std::make_unique<HostWorkHook>(first, first + p.window - 1));
  }
  for (const auto& h : s.opts.hooks) s.hooks.add(*h);
  s.micro = make_micro_step(*s.m);

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
  out.memory_per_rank = gather_memory(*m.comm, memory_stats(m.device), out.status == RunStatus::Ok);
  const auto mem = m.sharding->accounting();
  out.memory = MemoryAccounting{mem.param_bytes, mem.grad_bytes, mem.optimizer_state_bytes};
  out.peak_memory_bytes = peak_tensor_bytes(m.device);
  out.peak_rss_bytes = peak_rss_bytes();
  out.overflow_skips = m.precision->overflow_skips();
  return out;
}

// One step, as llm.c writes it: data, forward, backward, reduce (per micro-batch), then the
// update and the record. Each phase is one scope (Impl::Scope): the watchdog, the hooks and the
// phase timer see its edges; collectives that run inside a phase (ZeRO-3 gathers in the forward,
// the norms' all-reduce) are booked as comm.
void Trainer::run_steps(Impl& s, TrainOutcome& out, StepObserver& observer, PhaseTimer& timer,
                        int64_t last_step) {
  auto& m = *s.m;
  s.timer = &timer;
  const int64_t A = m.data_cfg.grad_accum;
  for (int64_t step = s.first_step; step <= last_step; ++step) {
    StepRecord rec;
    StepView v = s.begin_step(step, rec);
    torch::Tensor loss_sum;  // the micro-batches' losses, summed in fp64 (its own copy)
    {
      // The weights' low-precision casts: once per step, not once per micro-batch; the blocks'
      // as one copy per unit (WeightCopies), the others through autocast's cache. Neither under
      // ZeRO-3, whose parameters' storage comes and goes with each unit's forward and backward.
      const auto casts =
          m.precision->step_casts(A > 1 && !m.run.cuda_graphs && m.par.zero_stage < 3);
      const variants::WeightCopies::Window copies(m.weight_copies.get());
      for (v.micro = 0; v.micro < A; ++v.micro) {
        s.data(v);  // tokens: (B, T+1), on the host
        const Losses loss = s.forward(v);
        s.backward(v, loss.train);
        s.reduce(v, v.micro == A - 1);
        const auto reported = loss.reported.detach();
        if (v.micro == 0)
          loss_sum = reported.to(torch::kFloat64, /*non_blocking=*/false, /*copy=*/true);
        else
          loss_sum += reported.to(torch::kFloat64);
      }
    }
    const auto [local_loss, global_loss] = s.update(v, loss_sum);
    s.read(v, local_loss, global_loss);
    s.record(v);

    out.records.push_back(rec);
    const bool finite = std::isfinite(rec.loss);
    s.after_step(v, observer, finite);
    if (!finite) {
      out.status = RunStatus::Nonfinite;
      out.failed_step = step;
      out.failure = "non-finite loss at step " + std::to_string(step);  // the hooks may add why
      break;
    }
  }
}

}  // namespace lockstep::train
