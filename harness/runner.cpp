#include "harness/runner.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <iostream>

#include "harness/calibrate.h"
#include "harness/compat/torch_compat.h"
#include "harness/config/config.h"
#include "harness/dist/launcher.h"
#include "harness/dist/rendezvous.h"
#include "harness/export_envelope.h"
#include "harness/external/external_arm.h"
#include "harness/external/external_config.h"
#include "harness/finish.h"
#include "harness/history/store.h"
#include "harness/registry/catalog.h"
#include "harness/runs/metrics_log.h"
#include "harness/runs/run_folder.h"
#include "harness/runs/summary.h"
#include "harness/train/checkpoint.h"
#include "harness/train/probe/prober.h"
#include "harness/train/profile/peak.h"
#include "harness/train/profile/trace.h"
#include "harness/train/trainer.h"
#include "harness/train/watchdog.h"
#include "harness/util/exit_codes.h"
#include "harness/util/files.h"
#include "harness/util/process.h"
#include "harness/vocab/probe_file.h"
#include "reports/run_console.h"
#include "reports/run_progress.h"
#include "workloads/model_config.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

variants::Compute compute_of(const config::Config& cfg) {
  return *variants::parse_compute(cfg.str("precision.compute"));
}

// CPU MFU needs a calibrated GEMM peak for this thread count; measure it once if missing.
void ensure_calibration(const config::Config& cfg, bool quiet) {
  if (cfg.str("run.device") != "cpu") return;
  const int threads = static_cast<int>(cfg.integer("run.threads"));
  const auto peak = variants::traits(compute_of(cfg)).cpu_peak;
  if (!peak) return;  // no CPU GEMM peak for this precision (fp16): MFU unknown
  const std::string dtype = variants::name_of(*peak);
  if (cached_cpu_peak(threads, compat::torch_version(), dtype)) return;
  if (!quiet)
    std::cerr << "calibrating the " << dtype << " GEMM peak for " << threads
              << " thread(s) (once per machine)...\n";
  auto p = measure_gemm_peak(*peak, threads, 0.5);
  store_cpu_peak(threads, compat::torch_version(), dtype, p.flops,
                 "square GEMM " + std::to_string(p.best_n));
}

std::vector<std::string> child_args(const RunRequest& req, const fs::path& out) {
  std::vector<std::string> a{"run"};
  if (!req.resume.empty()) {
    a.push_back("--resume");
    a.push_back(req.resume);
  } else {
    a.push_back(req.config);
    a.push_back("--out");
    a.push_back(out.string());
  }
  for (const auto& s : req.sets) a.push_back("--set"), a.push_back(s);
  if (req.steps) a.push_back("--steps"), a.push_back(std::to_string(req.steps));
  if (req.stop_after) a.push_back("--stop-after"), a.push_back(std::to_string(req.stop_after));
  if (req.nproc) a.push_back("--nproc"), a.push_back(std::to_string(req.nproc));
  if (!req.export_losses.empty()) a.push_back("--export-losses"), a.push_back(req.export_losses);
  if (req.quiet) a.push_back("--quiet");
  if (!req.history.empty()) a.push_back("--history"), a.push_back(req.history);
  if (req.no_history) a.push_back("--no-history");
  return a;
}

// What finishing the run needs of its flags (harness/finish.h).
FinishOptions finish_options(const RunRequest& req) {
  FinishOptions f;
  f.history = req.history;
  f.no_history = req.no_history;
  f.export_losses = req.export_losses;
  f.quiet = req.quiet;
  return f;
}

// An arm with an [external] section (harness/external/external_arm.h): its command trains; here
// what takes LibTorch or the machine to know: the calibration, the peak FLOPs, the environment.
int run_external_arm(const RunRequest& req, const config::Config& cfg, const fs::path& out) {
  if (!req.resume.empty())
    throw UsageError(req.resume +
                     ": an external trainer's run cannot be resumed (Lockstep holds no checkpoint "
                     "of it); start a new run");
  const auto ext = external::ExternalConfig::from(cfg);
  if (ext.flops_per_token) ensure_calibration(cfg, req.quiet);
  reports::Progress progress(cfg.str("run.name"), cfg.integer("run.log_every"), ::isatty(1));
  auto o = external::train_arm(cfg, out, req.stop_after, req.quiet ? nullptr : &progress);

  PeakFlops peak{std::nullopt, "unknown: external.flops_per_token is not set"};
  if (ext.flops_per_token)
    peak = resolve_peak(cfg.str("run.device"), compute_of(cfg),
                        static_cast<int>(cfg.integer("run.threads")), compat::torch_version());
  auto env = train::describe_environment(cfg.str("run.device"), cfg.integer("run.threads"), 1);
  const auto summary =
      external::write_arm_summary(cfg, out, o, std::move(env), peak.flops, peak.source);
  return finish_run(finish_options(req), cfg, out, summary, o.records, "lockstep");
}

// --probe: the forward at a run's checkpoints, no training, no calibration, one rank
// (harness/train/probe/prober.h); writes probe.json and probe.bin.
int probe_arm(const RunRequest& req, const config::Config& cfg, const dist::RankInfo& who,
              const fs::path& out) {
  const runs::RunFolder folder(out);
  const fs::path checkpoints = runs::RunFolder(req.probe).checkpoints();
  if (!fs::is_directory(checkpoints))
    throw UsageError(req.probe + ": no checkpoints/ folder to probe (a run folder with "
                     "[checkpoint] every > 0)");
  train::Prober prober(cfg, who, checkpoints);
  fs::create_directories(out);
  folder.write_config(cfg.to_toml());
  const auto rec = prober.run();
  train::write_probe(out, rec);
  if (!req.quiet)
    std::cout << "probed " << rec.steps.size() << " checkpoints of " << req.probe << ", "
              << rec.tensors.size() << " tensors each: " << (out / "probe.json").string() << "\n";
  return kExitPass;
}

// Nobody launched us and the config asks for several ranks: be the launcher (one process per
// rank over loopback, harness/dist/launcher.h).
int launch_ranks(const RunRequest& req, const config::Config& cfg, const fs::path& out, int world) {
  ensure_calibration(cfg, req.quiet);
  fs::create_directories(out);
  dist::LaunchSpec spec{util::self_exe(), child_args(req, out), world,
                        cfg.number("parallel.timeout_s") + 30};
  return dist::launch(spec);
}

// One rank of Lockstep's own trainer: the run folder's files, the watchdog, the summary.
int train_rank(const RunRequest& req, const config::Config& cfg, const dist::RankInfo& who,
               const fs::path& out, int world) {
  const runs::RunFolder folder(out);
  if (world == 1) ensure_calibration(cfg, req.quiet);

  const bool rank0 = who.rank == 0;
  fs::create_directories(out);

  train::TrainOptions topts;
  topts.out_dir = out;
  topts.stop_after = req.stop_after;
  if (!req.resume.empty()) {
    topts.resume_from = train::latest_checkpoint(folder.checkpoints());
    if (topts.resume_from.empty()) {
      std::cerr << out.string() << ": no completed checkpoint to resume from\n";
      return kExitUsage;
    }
  }
  train::Trainer trainer(cfg, who, topts);
  // After the Trainer: it rejects what only LibTorch can check (fp16 on a CPU, a missing data
  // file), and a config error must leave the folder as it was.
  if (rank0 && req.resume.empty()) folder.write_config(cfg.to_toml());

  const fs::path metrics = folder.metrics(who.rank);
  if (!req.resume.empty()) runs::truncate_metrics(metrics, trainer.first_step() - 1);
  runs::MetricsLog log(metrics, /*append=*/!req.resume.empty());
  const bool tty = ::isatty(1) && world == 1;
  reports::Progress progress(cfg.str("run.name"), cfg.integer("run.log_every"), tty);
  train::Observers observers;
  observers.add(&log);
  if (rank0 && !req.quiet) observers.add(&progress);

  const auto model = workloads::ModelConfig::from(cfg);
  const auto gpu = trainer.gpu();  // this rank's own device, never "GPU 0"
  auto peak = resolve_peak(cfg.str("run.device"), compute_of(cfg),
                           static_cast<int>(cfg.integer("run.threads")), compat::torch_version(),
                           gpu ? &*gpu : nullptr);
  SummaryInputs in{cfg.str("run.name"), cfg.hash(), model.flops_per_token(),
                   peak.flops ? std::optional<double>(*peak.flops * world) : std::nullopt,
                   peak.source};

  auto write_summary = [&](const train::TrainOutcome& o, const std::vector<StepRecord>& recs) {
    std::vector<PluginRef> plugins;
    for (const auto& p : registry::plugin_files(cfg))
      plugins.push_back(PluginRef{p.file, p.sha256});
    auto summary = summarize_outcome(o, recs, in, plugins);
    if (rank0) folder.write_summary(summary);
    return summary;
  };

  train::Watchdog watchdog(trainer.progress(), who.rank, cfg.number("run.step_timeout_s"),
                           cfg.number("run.step_timeout_factor"), [&](const std::string& why) {
                             train::TrainOutcome o;
                             o.status = RunStatus::Hang;
                             o.failure = why;
                             o.failed_step = trainer.progress().step.load();
                             o.env = train::describe_environment(cfg.str("run.device"),
                                                                 cfg.integer("run.threads"), world);
                             write_summary(o, log.snapshot());
                           });
  struct FeedWatchdog : train::StepObserver {
    train::Watchdog& w;
    explicit FeedWatchdog(train::Watchdog& w) : w(w) {}
    void on_step(const StepRecord& r) override { w.step_done(r.step_ms); }
  } feed(watchdog);
  observers.add(&feed);

  auto outcome = trainer.run(observers);
  if (outcome.trace) outcome.trace->write(folder.trace(who.rank));
  if (rank0 && outcome.profiled_steps > 0)
    folder.write_layer_costs(outcome.profiled_steps, outcome.layer_costs);
  if (rank0 && outcome.host_work) folder.write_host_work(*outcome.host_work);
  // A resumed run's summary covers the whole curve: earlier steps come from the log.
  auto records = req.resume.empty() ? outcome.records : runs::read_metrics(metrics);
  auto summary = write_summary(outcome, records);
  if (!rank0) {
    if (outcome.status == RunStatus::Ok) return kExitPass;
    std::cerr << "rank " << who.rank << ": run failed: " << outcome.failure << "\n";
    return kExitRunFailed;
  }
  return finish_run(finish_options(req), cfg, out, summary, records, "rank 0");
}

}  // namespace

std::vector<config::FlagOverride> request_flags(const RunRequest& req) {
  std::vector<config::FlagOverride> flags;
  if (req.steps)
    flags.push_back({"--steps " + std::to_string(req.steps), "run.steps=" + std::to_string(req.steps)});
  if (req.nproc)
    flags.push_back({"--nproc " + std::to_string(req.nproc),
                     "parallel.world_size=" + std::to_string(req.nproc)});
  return flags;
}

int run_training(const RunRequest& req) {
  std::string config_path = req.config;
  fs::path out = req.out;
  if (!req.resume.empty()) {
    config_path = runs::RunFolder(req.resume).config().string();
    out = req.resume;
    if (!fs::exists(config_path)) {
      std::cerr << req.resume << ": not a run folder (no config.toml)\n";
      return kExitUsage;
    }
  }
  const auto cfg = config::Config::load(config_path, req.sets, request_flags(req));
  const auto who = dist::rank_info_from_env();
  const int world = static_cast<int>(cfg.integer("parallel.world_size"));
  if (out.empty()) out = util::timestamped_run_dir(cfg.str("run.name"));
  if (fs::exists(out) && !fs::is_directory(out))
    throw UsageError(out.string() + ": exists and is not a folder (--out names a run folder)");

  // A fresh run into a folder that already holds one would mix the two: metrics.jsonl and
  // summary.json overwritten, the old run's checkpoints (which --resume would pick up) and its
  // per-rank files (which diagnose reads) left behind. Refuse before writing anything. Ranks
  // started by a launcher skip this: the launcher (or the first rank) has created the folder.
  const runs::RunFolder folder(out);
  if (req.resume.empty() && who.source == "default" && folder.holds_run())
    throw UsageError(out.string() +
                     " already holds a run (config.toml); choose another --out, remove it, or "
                     "--resume it");

  if (external::is_external(cfg)) {
    if (!req.probe.empty()) return external::probe_arm(cfg, out, req.probe, req.quiet);
    if (!req.export_losses.empty() && !req.no_envelope && !req.quiet)
      std::cerr << "lockstep run: " << req.export_losses
                << " carries no noise envelope: an external trainer's runs are not perturbed "
                   "here (compare --golden falls back to the seed band)\n";
    return run_external_arm(req, cfg, out);
  }
  if (!req.probe.empty()) return probe_arm(req, cfg, who, out);
  const int code = who.source == "default" && world > 1 ? launch_ranks(req, cfg, out, world)
                                                         : train_rank(req, cfg, who, out, world);
  // The golden file's envelope, by the process nobody launched (harness/export_envelope.h).
  if (code != kExitPass || req.export_losses.empty() || req.no_envelope ||
      who.source != "default")
    return code;
  return export_envelope(req, cfg, out);
}

}  // namespace lockstep
