// `lockstep run` and `lockstep calibrate` (`lockstep demo` is in cmd_compare.cpp).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "harness/calibrate.h"
#include "harness/cli/cli.h"
#include "harness/cli/out_dir.h"
#include "harness/cli/validators.h"
#include "harness/util/exit_codes.h"
#include "harness/train/profile/peak.h"
#include "harness/runner.h"

namespace lockstep::cli {

void add_run_command(CLI::App& app, Action& action) {
  auto req = std::make_shared<RunRequest>();
  auto* run = app.add_subcommand("run", "Train the reference workload once and measure it");
  run->add_option("CONFIG", req->config, "config file (TOML)");
  run->add_option("--steps", req->steps,
                  "optimizer steps (overrides run.steps and the LR schedule's length)")
      ->check(positive_integer());
  run->add_option("--stop-after", req->stop_after,
                  "stop after this step; the schedule stays run.steps long")
      ->check(positive_integer());
  run->add_option("--out", req->out, "output folder (default runs/<time>-<name>)");
  run->add_option("--set", req->sets, "override a key: section.key=value (repeatable)")
      ->allow_extra_args(false);  // one value per --set: `--set k=v CONFIG` keeps CONFIG
  run->add_option("--nproc", req->nproc,
                  "ranks to spawn on this machine (overrides parallel.world_size)")
      ->check(positive_integer());
  run->add_option("--resume", req->resume, "continue a run folder from its latest checkpoint");
  run->add_option("--export-losses", req->export_losses,
                  "write the loss curve as a golden file, with the environment and the noise "
                  "envelope measured here (docs/golden.md)");
  run->add_flag("--no-envelope", req->no_envelope,
                "--export-losses without the noise envelope (no perturbed runs; compare "
                "--golden then judges approximate classes by the seed band)");
  run->add_option("--probe", req->probe,
                  "evaluate this config's forward at each checkpoint of that run folder instead "
                  "of training (the alignment's function probe)");
  run->add_flag("--quiet", req->quiet, "no progress or summary on stdout");
  run->add_option("--history", req->history,
                  "history database to record the run in (default: $LOCKSTEP_HISTORY, else "
                  "runs/history.sqlite)");
  run->add_flag("--no-history", req->no_history, "do not record this run in the history database");
  run->callback([&action, req, run] {
    action = [req, run] {
      if (req->config.empty() == req->resume.empty()) {
        std::cerr << "lockstep run: give a CONFIG or --resume DIR (one of them)\n" << run->help();
        return kExitUsage;
      }
      // A resumed run continues the run its folder's config.toml describes; a changed key or
      // schedule would make it another run with that file still claiming the old one.
      if (!req->resume.empty() &&
          (!req->sets.empty() || req->steps || req->nproc || !req->out.empty())) {
        std::cerr << "lockstep run: --resume continues " << req->resume
                  << " as its config.toml says; --set, --steps, --nproc and --out do not "
                     "apply (--stop-after does)\n";
        return kExitUsage;
      }
      if (req->no_envelope && req->export_losses.empty()) {
        std::cerr << "lockstep run: --no-envelope applies to --export-losses only\n";
        return kExitUsage;
      }
      if (!req->probe.empty() && (!req->resume.empty() || req->stop_after ||
                                  !req->export_losses.empty() || req->nproc > 1)) {
        std::cerr << "lockstep run: --probe trains nothing; --resume, --stop-after, "
                     "--export-losses and --nproc do not apply\n";
        return kExitUsage;
      }
      check_out_dir(req->out);
      return run_training(*req);
    };
  });
}

void add_calibrate_command(CLI::App& app, Action& action) {
  struct Opts {
    std::vector<int> threads{1};
    std::vector<std::string> dtypes = variants::names_of(variants::calibrated_computes());
    double seconds = 0.5;
  };
  auto o = std::make_shared<Opts>();
  auto* cal = app.add_subcommand(
      "calibrate",
      "Measure this CPU's GEMM peak per dtype and thread count (for MFU) and cache it");
  cal->add_option("--threads", o->threads, "thread counts to measure")->check(positive_integer());
  cal->add_option("--dtypes", o->dtypes, "dtypes to measure")
      ->check(CLI::IsMember(variants::names_of(variants::calibrated_computes())));
  cal->add_option("--seconds", o->seconds, "time per GEMM size")->check(positive_number());
  cal->callback([&action, o] {
    action = [o] {
      for (int t : o->threads)
        for (const auto& d : o->dtypes) {
          auto p = measure_gemm_peak(*variants::parse_compute(d), t, o->seconds);
          store_cpu_peak(t, libtorch_version(), d, p.flops,
                         "square GEMM " + std::to_string(p.best_n));
          std::printf("%-5s %2d thread(s): %8.1f GFLOP/s (best at %dx%d)\n", d.c_str(), t,
                      p.flops / 1e9, p.best_n, p.best_n);
        }
      std::cout << "cached in " << calibration_file().string() << "\n";
      return kExitPass;
    };
  });
}

}  // namespace lockstep::cli
