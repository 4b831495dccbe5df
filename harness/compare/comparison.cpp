#include "harness/compare/comparison.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "harness/compare/analysis.h"
#include "harness/exit_codes.h"
#include "harness/gate/gate.h"
#include "harness/stats/statistics.h"
#include "harness/util/files.h"
#include "harness/util/process.h"
#include "reports/run_json.h"

namespace lockstep::compare {
namespace fs = std::filesystem;

namespace {

constexpr double kRunTimeoutS = 4 * 3600;

struct RunJob {
  std::string label;
  std::string config;
  std::vector<std::string> sets;
  fs::path dir;
  int64_t stop_after = 0;
};

struct RunOutput {
  util::ExitStatus exit;
  bool has_summary = false;
  RunSummary summary;
  std::vector<StepRecord> records;
  std::string status = "ok";
  std::string failure;
  int64_t failed_step = 0;
};

std::vector<std::string> argv_of(const RunJob& j) {
  // --no-history: the arms are parts of this comparison, which is recorded once as a whole.
  std::vector<std::string> a{util::self_exe(), "run",     j.config,      "--out",
                             j.dir.string(),   "--quiet", "--no-history"};
  for (const auto& s : j.sets) a.push_back("--set"), a.push_back(s);
  if (j.stop_after > 0) a.push_back("--stop-after"), a.push_back(std::to_string(j.stop_after));
  return a;
}

RunOutput read_run(const RunJob& j, const util::ExitStatus& st) {
  RunOutput o;
  o.exit = st;
  const fs::path summary = j.dir / "summary.json", metrics = j.dir / "metrics.jsonl";
  if (fs::exists(summary)) {
    o.summary = reports::read_summary(summary);
    o.has_summary = true;
    o.status = o.summary.status;
    o.failure = o.summary.failure;
    o.failed_step = o.summary.failed_step;
  }
  if (fs::exists(metrics)) o.records = reports::read_metrics(metrics);
  if (st.code != 0 && o.status == "ok") {
    o.status = st.code == 2 ? "config error" : "crashed";
    o.failure = st.describe() + ": " + util::last_nonempty_line(j.dir / "lockstep.log");
  }
  return o;
}

std::vector<RunOutput> execute(const std::vector<RunJob>& jobs, int parallel,
                               const std::vector<std::vector<std::string>>& slot_env = {}) {
  std::vector<std::vector<std::string>> argvs;
  std::vector<fs::path> logs;
  for (const auto& j : jobs) {
    // The arm folders belong to this comparison: a rerun into the same --out replaces them (a
    // run refuses a folder that already holds one).
    fs::remove_all(j.dir);
    fs::create_directories(j.dir);
    argvs.push_back(argv_of(j));
    logs.push_back(j.dir / "lockstep.log");
  }
  auto sts = util::run_all(argvs, logs, parallel, kRunTimeoutS, slot_env);
  std::vector<RunOutput> out;
  for (size_t i = 0; i < jobs.size(); ++i) out.push_back(read_run(jobs[i], sts[i]));
  return out;
}

std::vector<double> losses_of(const std::vector<StepRecord>& recs) {
  std::vector<double> v;
  for (const auto& r : recs) v.push_back(r.loss);
  return v;
}

std::vector<double> timed_ms_of(const std::vector<StepRecord>& recs) {
  std::vector<double> v;
  for (const auto& r : recs)
    if (r.timed && std::isfinite(r.loss)) v.push_back(r.step_ms);
  return v;
}

void fail_arm(CompareResult& r, ArmResult& arm, const RunOutput& o) {
  arm.status = o.status;
  arm.failure = o.failure;
  arm.failed_step = o.failed_step;
  if (r.failed_arm.empty()) {
    r.failed_arm = arm.label;
    r.failure = o.status + (o.failed_step ? " at step " + std::to_string(o.failed_step) : "") +
                ": " + o.failure;
  }
}

void fill_arm_from_alignment(ArmResult& arm, const RunJob& j, const RunOutput& o) {
  arm.alignment_run = o.summary;
  arm.loss_curve = losses_of(o.records);
  arm.peak_memory_bytes = o.summary.peak_memory_bytes;
  arm.run_dir = j.dir.string();
}

int auto_parallel(const config::Config& a, const config::Config& b) {
  const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  int64_t per_run = 1;
  for (const auto* c : {&a, &b})
    per_run = std::max(per_run, c->integer("run.threads") * c->integer("parallel.world_size"));
  return static_cast<int>(std::max<int64_t>(1, cores / per_run));
}

// On CUDA the loss-check runs are sized by GPUs, not cores: each concurrent run gets GPUs of its
// own (CUDA_VISIBLE_DEVICES per slot; its ranks then pick device = local rank), never GPU 0 for
// all. No GPU visible from here: one run at a time. Empty on a CPU comparison.
std::vector<std::vector<std::string>> cuda_slots(const config::Config& a, const config::Config& b,
                                                 int requested) {
  if (a.str("run.device") != "cuda" && b.str("run.device") != "cuda") return {};
  const int per_run = static_cast<int>(
      std::max(a.integer("parallel.world_size"), b.integer("parallel.world_size")));
  auto slots = util::gpu_slots(util::visible_gpus(), per_run);
  if (slots.empty()) slots.push_back({});  // the runs find (or miss) their GPUs themselves
  if (requested > 0 && static_cast<size_t>(requested) < slots.size()) slots.resize(requested);
  return slots;
}

}  // namespace

std::vector<double> read_golden(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open golden file");
  std::vector<double> curve;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    long long step = 0;
    double loss = 0;
    if (!(ss >> step >> loss) || step != static_cast<long long>(curve.size()) + 1)
      throw UsageError(path + ":" + std::to_string(n) + ": expected \"" +
                       std::to_string(curve.size() + 1) + " <loss>\"");
    curve.push_back(loss);
  }
  if (curve.empty()) throw UsageError(path + ": no losses");
  return curve;
}

CompareResult run_comparison(const CompareRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  auto log = [&](const std::string& s) {
    if (req.log) req.log(s);
  };
  CompareResult r;
  r.out_dir = req.out_dir;
  r.mode = req.golden_file.empty() ? "ab" : "golden";

  auto with_steps = [&](std::vector<std::string> sets) {
    if (req.steps > 0) sets.push_back("run.steps=" + std::to_string(req.steps));
    return sets;
  };
  const auto bsets = with_steps(req.baseline.sets), vsets = with_steps(req.variant.sets);
  const auto vcfg = config::Config::load(req.variant.config, vsets);
  const auto bcfg = r.mode == "ab" ? config::Config::load(req.baseline.config, bsets) : vcfg;
  if (r.mode == "golden")
    r.baseline.loss_curve = read_golden(req.golden_file);  // before any run starts

  auto resolved = gate::resolve_policy(req.policy_file, vcfg, req.variant.config);
  r.policy = resolved.policy;
  r.policy_source = resolved.source;
  if (req.check_step >= 0) r.policy.check_step = req.check_step;
  if (req.repeats > 0) r.policy.repeats = req.repeats;
  // The loss is checked at a step both arms reach; past the end is a usage error, not a step to
  // clamp silently (the seed band would be read at the wrong step).
  const int64_t last_step = std::min(bcfg.integer("run.steps"), vcfg.integer("run.steps"));
  if (r.policy.check_step > last_step)
    throw UsageError((req.check_step >= 0 ? std::string("--check-step ")
                                          : "gate.check_step = ") +
                     std::to_string(r.policy.check_step) + " is past the last step (" +
                     std::to_string(last_step) + ")");
  if (r.mode == "ab" && r.policy.repeats < 5)
    r.warnings.push_back("too few repeats: " + std::to_string(r.policy.repeats) +
                         " per arm; performance verdicts need at least 5 (the exact Mann-Whitney p "
                         "cannot reach 0.05 below 4)");

  r.baseline.label = "baseline";
  r.variant.label = "variant";
  r.baseline.name = bcfg.str("run.name");
  r.variant.name = vcfg.str("run.name");
  r.baseline.config_path = r.mode == "ab" ? req.baseline.config : req.golden_file;
  r.variant.config_path = req.variant.config;

  std::string klass = "exact";
  if (r.mode == "ab") {
    r.changes = config::diff(bcfg, vcfg);
    auto knobs = classify_changes(r.changes, vcfg.str("run.device"), vcfg.str("precision.compute"));
    r.changed_knobs = knobs.knobs;
    klass = knobs.klass;
    r.warnings.insert(r.warnings.end(), knobs.warnings.begin(), knobs.warnings.end());
    if (r.changes.empty())
      r.warnings.push_back("the configs are identical: this is an A/A comparison");
  }
  const auto slots = cuda_slots(bcfg, vcfg, req.parallel);
  const int parallel = !slots.empty()     ? static_cast<int>(slots.size())
                       : req.parallel > 0 ? req.parallel
                                          : auto_parallel(bcfg, vcfg);
  const fs::path out = req.out_dir;
  const fs::path arms = out / "arms";

  // (1) Equivalence: full-length runs at the comparison seed (and the seed band).
  std::vector<RunJob> jobs;
  if (r.mode == "ab")
    jobs.push_back(RunJob{"baseline", req.baseline.config, bsets, arms / "baseline", 0});
  jobs.push_back(RunJob{"variant", req.variant.config, vsets, arms / "variant", 0});
  const int64_t seed = bcfg.integer("run.seed");
  if (klass == "approximate") {
    for (int64_t k = 1; k <= r.policy.seeds; ++k) {
      auto sets = bsets;
      sets.push_back("run.seed=" + std::to_string(seed + k));
      jobs.push_back(RunJob{"baseline-seed" + std::to_string(seed + k), req.baseline.config, sets,
                            arms / ("baseline-seed" + std::to_string(seed + k)), 0});
    }
  }
  log("full-length runs for the loss check: " + std::to_string(jobs.size()) + " (" +
      std::to_string(parallel) + " at a time)");
  auto outs = execute(jobs, parallel, slots);

  size_t vi = r.mode == "ab" ? 1 : 0;
  if (r.mode == "ab") {
    fill_arm_from_alignment(r.baseline, jobs[0], outs[0]);
    r.env = outs[0].summary.env;
    if (outs[0].status != "ok") fail_arm(r, r.baseline, outs[0]);
  } else {
    r.baseline.name = "golden";
    r.loss_reference = "golden file " + req.golden_file;
  }
  fill_arm_from_alignment(r.variant, jobs[vi], outs[vi]);
  if (r.mode == "golden") r.env = outs[vi].summary.env;
  if (outs[vi].status != "ok") fail_arm(r, r.variant, outs[vi]);
  std::optional<BandInput> band;
  if (klass == "approximate") {
    BandInput b;
    b.seeds.push_back(seed);
    const int64_t cs = r.policy.check_step > 0 ? r.policy.check_step
                                               : static_cast<int64_t>(r.baseline.loss_curve.size());
    b.losses.push_back(cs >= 1 && cs <= static_cast<int64_t>(r.baseline.loss_curve.size())
                           ? r.baseline.loss_curve[static_cast<size_t>(cs - 1)]
                           : NAN);
    for (size_t i = 2; i < jobs.size(); ++i) {
      if (outs[i].status != "ok") {
        fail_arm(r, r.baseline, outs[i]);
        continue;
      }
      auto curve = losses_of(outs[i].records);
      b.seeds.push_back(seed + static_cast<int64_t>(i) - 1);
      b.losses.push_back(cs >= 1 && cs <= static_cast<int64_t>(curve.size())
                             ? curve[static_cast<size_t>(cs - 1)]
                             : NAN);
    }
    band = b;
  }
  const bool from_history = r.mode == "ab" && !req.reference_curve.empty();
  if (from_history) {
    r.loss_reference = req.reference_source.empty() ? "history run" : req.reference_source;
    r.warnings.push_back("loss reference from " + r.loss_reference +
                         " (--against-history): the variant's loss is checked against that "
                         "recorded baseline curve; the fresh baseline run is still timed");
  }
  r.alignment =
      check_alignment(from_history ? req.reference_curve : r.baseline.loss_curve,
                      r.variant.loss_curve, r.policy.check_step, r.policy.tolerance, klass, band);

  // (2) Speed: interleaved timing repeats, only for two healthy, aligned arms.
  const bool time_it = r.mode == "ab" && r.failed_arm.empty() && r.alignment.aligned;
  if (r.mode == "ab" && !time_it && r.failed_arm.empty())
    r.warnings.push_back(
        "not timed: the loss does not align, and an optimization that changes the math is rejected "
        "before its speed matters");
  if (time_it) {
    // Warmup and profiled steps are never timed: the window covers them plus the timed steps.
    const int64_t window = std::min(
        bcfg.integer("run.warmup_steps") + bcfg.integer("profile.window") + r.policy.timing_steps,
        bcfg.integer("run.steps"));
    std::vector<std::vector<double>> curves_b, curves_v;
    int idx = 0;
    for (int64_t i = 0; i < r.policy.repeats; ++i) {
      for (int k = 0; k < 2; ++k) {
        const bool baseline_first = (i % 2 == 0);
        const bool is_b = (k == 0) == baseline_first;  // A B, B A, A B, ...
        ArmResult& arm = is_b ? r.baseline : r.variant;
        char name[64];
        std::snprintf(name, sizeof name, "%02d-%s", ++idx, is_b ? "baseline" : "variant");
        RunJob j{arm.label, is_b ? req.baseline.config : req.variant.config, is_b ? bsets : vsets,
                 arms / "timing" / name, window};
        log("timing repeat " + std::to_string(idx) + "/" + std::to_string(2 * r.policy.repeats) +
            ": " + arm.label);
        auto o = execute({j}, 1)[0];
        if (o.status != "ok") {
          fail_arm(r, arm, o);
          break;
        }
        arm.repeats.push_back(o.summary);
        arm.tokens_per_sec_repeats.push_back(o.summary.tokens_per_sec);
        if (o.summary.mfu) arm.mfu_repeats.push_back(*o.summary.mfu);
        arm.step_ms_repeats.push_back(timed_ms_of(o.records));
        (is_b ? curves_b : curves_v).push_back(losses_of(o.records));
      }
      if (!r.failed_arm.empty()) break;
    }
    if (r.failed_arm.empty()) {
      r.timed = true;
      r.repeats = r.policy.repeats;
      r.too_few_repeats = r.repeats < 5;
      r.determinism.checked = true;
      const std::string db = first_nondeterminism(r.baseline.loss_curve, curves_b);
      const std::string dv = first_nondeterminism(r.variant.loss_curve, curves_v);
      r.determinism.baseline_ok = db.empty();
      r.determinism.variant_ok = dv.empty();
      r.determinism.detail =
          db.empty() && dv.empty()
              ? "every repeat reproduced its full run bit for bit"
              : (db.empty() ? "" : "baseline " + db) +
                    (dv.empty() ? "" : (db.empty() ? "" : "; ") + std::string("variant ") + dv);
      for (auto* arm : {&r.baseline, &r.variant}) {
        median_with_ci(arm->tokens_per_sec_repeats, r.policy, &arm->tokens_per_sec,
                       &arm->tokens_per_sec_ci_lo, &arm->tokens_per_sec_ci_hi);
        if (!arm->mfu_repeats.empty()) arm->mfu = stats::median(arm->mfu_repeats);
        std::vector<double> pooled;
        for (const auto& x : arm->step_ms_repeats) pooled.insert(pooled.end(), x.begin(), x.end());
        arm->step_ms = Percentiles{stats::percentile(pooled, 50), stats::percentile(pooled, 95),
                                   stats::percentile(pooled, 99), stats::mean(pooled)};
      }
      aggregate_profile(r.baseline);
      aggregate_profile(r.variant);
      r.breakdown = compare_breakdown(r.baseline, r.variant);
      r.delta.tokens_per_sec_pct = throughput_delta(r.baseline.tokens_per_sec_repeats,
                                                    r.variant.tokens_per_sec_repeats, r.policy);
      r.delta.mfu_pts = mfu_delta(r.baseline.mfu_repeats, r.variant.mfu_repeats, r.policy);
      r.delta.p50_ms_pct =
          latency_delta(r.baseline.step_ms_repeats, r.variant.step_ms_repeats, 50, r.policy);
      r.delta.p99_ms_pct =
          latency_delta(r.baseline.step_ms_repeats, r.variant.step_ms_repeats, 99, r.policy);
    }
  }
  if (r.mode == "ab" && r.baseline.peak_memory_bytes > 0 && r.variant.peak_memory_bytes > 0)
    r.delta.memory_pct = 100.0 * (static_cast<double>(r.variant.peak_memory_bytes) /
                                      static_cast<double>(r.baseline.peak_memory_bytes) -
                                  1.0);

  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gate::apply(r);
  return r;
}

}  // namespace lockstep::compare
