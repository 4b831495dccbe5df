#include "harness/export_envelope.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "harness/compare/comparison_stats.h"
#include "harness/compare/envelope.h"
#include "harness/compare/envelope_noise.h"
#include "harness/compare/golden_file.h"
#include "harness/runs/child_run.h"
#include "harness/util/exit_codes.h"
#include "harness/util/files.h"
#include "harness/vocab/gate_policy.h"

namespace lockstep {
namespace fs = std::filesystem;

namespace {

// The run's own overrides (and --steps as the key it stands for) plus noise u under seed k;
// no profile window: only the losses are read.
runs::RunJob noise_job(const RunRequest& req, const std::string& config, double u, int64_t k,
                       const fs::path& out) {
  runs::RunJob j;
  j.label = "envelope-noise" + std::to_string(k);
  j.config = config;
  j.sets = req.sets;
  for (const auto& f : request_flags(req))
    if (f.assignment.rfind("run.steps=", 0) == 0) j.sets.push_back(f.assignment);
  char noise[40];
  std::snprintf(noise, sizeof noise, "%.17g", u);
  j.sets.push_back(std::string("faults.weight_rounding_noise=") + noise);
  j.sets.push_back("faults.noise_seed=" + std::to_string(k));
  j.sets.push_back("profile.window=0");
  j.nproc = req.nproc;
  j.stop_after = req.stop_after;
  j.dir = out / "envelope" / ("noise" + std::to_string(k));
  return j;
}

}  // namespace

int export_envelope(const RunRequest& req, const config::Config& cfg, const fs::path& out) {
  const auto policy = gate::Policy::from(cfg);
  const auto [u, source] = compare::envelope_noise(policy, cfg, cfg);
  const std::string config =
      req.resume.empty() ? req.config : (fs::path(req.resume) / "config.toml").string();
  compare::GoldenFile g = compare::read_golden_file(req.export_losses);
  if (!req.quiet)
    std::cerr << "export: the noise envelope, " << policy.envelope_runs
              << " perturbed run(s) (weight noise " << source << "; --no-envelope skips it)\n";
  std::vector<runs::RunJob> jobs;
  for (int64_t k = 1; k <= policy.envelope_runs; ++k)
    jobs.push_back(noise_job(req, config, u, k, out));
  const auto outs = runs::run_children(jobs, 1);
  std::vector<std::vector<double>> curves;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].ok()) {
      std::cerr << "lockstep run: " << req.export_losses << " has no envelope: perturbed run "
                << jobs[i].dir.string() << " failed: " << outs[i].failure << "\n";
      return kExitRunFailed;
    }
    curves.emplace_back();
    for (const auto& r : outs[i].records) curves.back().push_back(r.loss);
  }
  const auto n = static_cast<int64_t>(g.curve.size());
  g.envelope_window = compare::envelope_window(n);
  g.envelope = compare::noise_envelope(g.curve, curves, g.envelope_window);
  bool finite = static_cast<int64_t>(g.envelope.size()) == n;
  for (double e : g.envelope) finite = finite && std::isfinite(e);
  if (!finite) {
    std::cerr << "lockstep run: " << req.export_losses
              << " has no envelope: a perturbed run's loss is not finite, or it ran fewer steps\n";
    return kExitRunFailed;
  }
  g.envelope_runs = policy.envelope_runs;
  g.envelope_noise = u;
  g.envelope_noise_source = source;
  util::write_atomic(req.export_losses, compare::golden_text(g));
  return kExitPass;
}

}  // namespace lockstep
