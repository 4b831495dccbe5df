#include "harness/external/external_arm.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "harness/external/external_config.h"
#include "harness/runs/metrics_log.h"
#include "harness/runs/run_folder.h"
#include "harness/runs/summary.h"
#include "harness/util/exit_codes.h"
#include "harness/vocab/probe_file.h"

namespace lockstep::external {
namespace fs = std::filesystem;

namespace {

// The steps an external trainer checkpoints at (protocol 2's probe): those Lockstep's own
// trainer would keep with the same [checkpoint] every and keep, the last step excluded.
std::vector<int64_t> external_checkpoint_steps(const config::Config& cfg) {
  const int64_t every = cfg.integer("checkpoint.every"), keep = cfg.integer("checkpoint.keep");
  const int64_t steps = cfg.integer("run.steps");
  std::vector<int64_t> out;
  if (every <= 0) return out;
  for (int64_t s = every; s < steps; s += every) out.push_back(s);
  if (keep > 0 && static_cast<int64_t>(out.size()) > keep) out.erase(out.begin(), out.end() - keep);
  return out;
}

}  // namespace

ExternalOutcome train_arm(const config::Config& cfg, const fs::path& out, int64_t stop_after,
                          train::StepObserver* progress) {
  const runs::RunFolder folder(out);
  fs::create_directories(out);
  folder.write_config(cfg.to_toml());

  runs::MetricsLog log(folder.metrics(0), /*append=*/false);
  train::Observers observers;
  observers.add(&log);
  if (progress) observers.add(progress);
  ExternalRunOptions opts;
  opts.stop_after = stop_after;
  opts.checkpoint_steps = external_checkpoint_steps(cfg);
  opts.checkpoint_dir = folder.checkpoints();
  auto o = run_external(cfg, out, opts, observers);
  if (!o.turns_ended.empty() && o.turns_ended != "the trainer finished")
    std::cerr << "external trainer: the timing run's turns with its peer ended: " << o.turns_ended
              << "\n";
  return o;
}

RunSummary write_arm_summary(const config::Config& cfg, const fs::path& out, ExternalOutcome o,
                             std::map<std::string, std::string> env,
                             std::optional<double> peak_flops, const std::string& peak_source) {
  const auto ext = ExternalConfig::from(cfg);
  SummaryInputs in{cfg.str("run.name"), cfg.hash(), ext.flops_per_token.value_or(0), peak_flops,
                   peak_source};
  o.env = std::move(env);
  o.env["trainer"] = "external";
  o.env["external_command"] = o.command_line;
  o.protocol.to_env(o.env);
  auto summary = summarize_outcome(o, o.records, in);
  summary.mfu_formula = ext.flops_per_token ? "external.flops_per_token (declared by the config)"
                                            : "unknown: external.flops_per_token is not set";
  bool phases = false;  // a trainer that reports no phase times has no breakdown to classify
  for (const auto& [k, v] : summary.phase_ms_mean) phases = phases || v > 0;
  if (!phases) summary.bound = "unknown";
  runs::RunFolder(out).write_summary(summary);
  return summary;
}

int probe_arm(const config::Config& cfg, const fs::path& out, const std::string& probe_run,
              bool quiet) {
  const runs::RunFolder folder(out);
  const fs::path checkpoints = runs::RunFolder(probe_run).checkpoints();
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(checkpoints, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() == 13 && n.rfind("step-", 0) == 0 &&
        n.find_first_not_of("0123456789", 5) == std::string::npos)
      found.push_back(e.path());
  }
  std::sort(found.begin(), found.end());  // step-%08d: by step
  if (found.empty())
    throw UsageError(probe_run +
                     ": no checkpoints/step-NNNNNNNN to probe (the trainer writes them "
                     "at LOCKSTEP_CHECKPOINT_STEPS when it announces \"probe\")");
  fs::create_directories(out);
  folder.write_config(cfg.to_toml());
  ExternalRunOptions opts;
  opts.probe_checkpoints = found;
  opts.probe_out = out;
  const auto o = run_external_probe(cfg, out, opts);
  std::string failure = o.failure;
  if (o.status == RunStatus::Ok) {
    try {  // what the trainer wrote must be a probe of exactly these checkpoints
      const auto rec = train::read_probe(out);
      if (rec.steps.size() != found.size())
        throw std::runtime_error((out / "probe.json").string() + ": " +
                                 std::to_string(rec.steps.size()) + " steps, " +
                                 std::to_string(found.size()) + " checkpoints were probed");
      if (rec.buckets != train::kProbeBuckets)
        throw std::runtime_error(
            (out / "probe.json").string() + ": buckets = " + std::to_string(rec.buckets) +
            ", the probe's sketch has " + std::to_string(train::kProbeBuckets));
      if (!quiet)
        std::cout << "probed " << rec.steps.size() << " checkpoints of " << probe_run << ", "
                  << rec.tensors.size() << " tensors each: " << (out / "probe.json").string()
                  << "\n";
      return kExitPass;
    } catch (const std::exception& e) {
      failure = std::string("external trainer's probe: ") + e.what();
    }
  }
  std::cerr << "run failed: " << failure << "\n";
  return kExitRunFailed;
}

}  // namespace lockstep::external
