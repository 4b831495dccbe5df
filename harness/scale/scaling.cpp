#include "harness/scale/scaling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "harness/config/config.h"
#include "harness/util/exit_codes.h"
#include "harness/runs/child_run.h"
#include "harness/stats/statistics.h"
#include "harness/util/format.h"
#include "harness/util/process.h"

namespace lockstep::scale {
namespace fs = std::filesystem;

namespace {

constexpr double kBusyLoad = 0.5;

// One distinct run configuration (n, global batch); strong and weak points may share one.
struct Job {
  int n = 0;
  int64_t batch = 0;
  bool set_batch = false;  // pass --set data.batch_size (weak points)
  std::string label;       // "strong-2"
  bool failed = false;
  std::string failure;
  std::vector<RunSummary> summaries;
  std::vector<std::string> dirs;
};

// One run of a point: its outcome, or why it does not count ("status: reason").
struct PointRun {
  bool ok = false;
  RunSummary summary;
  std::string failure;
};

PointRun run_one(const ScaleRequest& req, const Job& j, int64_t stop_after, const fs::path& dir) {
  runs::RunJob job;
  job.label = j.label;
  job.config = req.config;
  job.nproc = j.n;
  job.sets = req.sets;
  job.sets.push_back("parallel.world_size=" + std::to_string(j.n));
  if (j.set_batch) job.sets.push_back("data.batch_size=" + std::to_string(j.batch));
  job.stop_after = stop_after;
  job.dir = dir;
  const runs::RunOutcome o = runs::run_child(job);
  std::string failure = o.failure;
  if (o.failed_step) failure = "at step " + std::to_string(o.failed_step) + ": " + failure;
  PointRun p;
  p.ok = o.ok();
  p.summary = o.summary;
  if (!p.ok) {
    p.failure = to_string(o.status) + (failure.empty() ? "" : ": " + failure);
  } else if (!(std::isfinite(o.summary.tokens_per_sec) && o.summary.tokens_per_sec > 0)) {
    p.ok = false;
    p.failure = "no throughput: no timed step recorded (timed steps: " +
                std::to_string(o.summary.timed_steps) + ")";
  }
  return p;
}

double share_of(const RunSummary& s, const std::string& phase) {
  auto it = s.phase_share.find(phase);
  return it == s.phase_share.end() ? 0.0 : it->second;
}

}  // namespace

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::Ok: return "ok";
    case PointStatus::Skipped: return "skipped";
    case PointStatus::Failed: return "failed";
  }
  return "?";
}

const char* to_string(Mode m) {
  return m == Mode::Strong ? "strong" : m == Mode::Weak ? "weak" : "both";
}

std::optional<Mode> parse_mode(const std::string& word) {
  for (Mode m : {Mode::Strong, Mode::Weak, Mode::Both})
    if (word == to_string(m)) return m;
  return std::nullopt;
}

std::vector<ScalePoint> plan_series(Mode mode, const std::vector<int>& nprocs, int64_t base_batch) {
  std::vector<int> ns = nprocs;
  std::sort(ns.begin(), ns.end());
  std::vector<ScalePoint> out;
  for (int n : ns) {
    ScalePoint p;
    p.mode = mode;
    p.n = n;
    p.global_batch = mode == Mode::Weak ? base_batch * n : base_batch;
    if (n <= 0 || p.global_batch % n != 0) {
      p.status = PointStatus::Skipped;
      p.note = "data.batch_size = " + std::to_string(p.global_batch) +
               " (global) is not divisible by " + std::to_string(n) +
               " ranks; the batch is never changed silently, so N=" + std::to_string(n) +
               " is skipped";
    } else {
      p.micro_batch = p.global_batch / n;
    }
    out.push_back(p);
  }
  return out;
}

void finish_series(ScaleSeries& s) {
  std::sort(s.points.begin(), s.points.end(),
            [](const ScalePoint& a, const ScalePoint& b) { return a.n < b.n; });
  const ScalePoint* ref = nullptr;
  for (auto& p : s.points) {
    if (!p.measured()) continue;
    p.tokens_per_sec = stats::median(p.tokens_per_sec_repeats);
    p.comm_share = p.comm_share_repeats.empty() ? NAN : stats::median(p.comm_share_repeats);
    p.step_ms_p50 = p.step_ms_p50_repeats.empty() ? NAN : stats::median(p.step_ms_p50_repeats);
    if (!ref && std::isfinite(p.tokens_per_sec) && p.tokens_per_sec > 0) ref = &p;
  }
  s.ref_n = ref ? ref->n : 0;
  std::vector<SpeedupPoint> pts;
  for (auto& p : s.points) {
    p.speedup = p.efficiency = NAN;
    if (!ref || !p.measured()) continue;
    p.speedup = p.tokens_per_sec / ref->tokens_per_sec;
    p.efficiency = p.speedup / (static_cast<double>(p.n) / ref->n);
    pts.push_back(SpeedupPoint{static_cast<double>(p.n), p.speedup});
  }
  s.fit = fit_amdahl(pts);
}

std::string micro_batch_warning(const ScaleSeries& s) {
  std::vector<const ScalePoint*> planned;
  for (const auto& p : s.points)
    if (p.status != PointStatus::Skipped && p.micro_batch > 0) planned.push_back(&p);
  if (planned.size() < 2) return "";
  std::sort(planned.begin(), planned.end(), [](auto* a, auto* b) { return a->n < b->n; });
  if (planned.back()->micro_batch >= planned.front()->micro_batch) return "";
  std::string sizes;
  for (size_t i = 0; i < planned.size(); ++i)
    sizes += (i ? ", " : "") + std::to_string(planned[i]->micro_batch) + (i ? "" : " sequences") +
             " at N=" + std::to_string(planned[i]->n);
  return "the per-rank micro-batch shrinks with scale (" + std::string(to_string(s.mode)) +
         " scaling keeps the global batch at " + std::to_string(planned.front()->global_batch) +
         "): " + sizes +
         " per rank. Each rank gets less work per step, so the devices starve (memory-bound "
         "kernels, fixed "
         "per-step overheads and communication dominate). Scale the global batch with the ranks "
         "(weak scaling, "
         "--mode weak) to keep per-rank work constant";
}

bool shares_cores(long host_cores, int max_n, int64_t threads_per_rank, const std::string& device) {
  return device == "cpu" && host_cores > 0 &&
         static_cast<int64_t>(max_n) * threads_per_rank > host_cores;
}

const ScaleSeries* ScaleResult::find(Mode m) const {
  for (const auto& s : series)
    if (s.mode == m) return &s;
  return nullptr;
}

const ScaleSeries* ScaleResult::headline() const {
  if (const auto* s = find(Mode::Strong)) return s;
  return series.empty() ? nullptr : &series.front();
}

void finish_result(ScaleResult& r) {
  for (auto& s : r.series) finish_series(s);
  const int max_n = r.nprocs.empty() ? 0 : *std::max_element(r.nprocs.begin(), r.nprocs.end());

  for (const auto& s : r.series) {
    const std::string w = micro_batch_warning(s);
    if (!w.empty()) r.warnings.push_back(w);
  }
  r.shares_cores = shares_cores(r.host_cores, max_n, r.threads_per_rank, r.device);
  if (r.shares_cores)
    r.warnings.push_back(
        "the ranks share this host's cores: " + std::to_string(max_n) + " ranks x " +
        std::to_string(r.threads_per_rank) +
        " thread(s) = " + std::to_string(static_cast<int64_t>(max_n) * r.threads_per_rank) +
        " threads on " + std::to_string(r.host_cores) +
        " cores, so the figures measure the harness's scaling on this box, not a cluster's");
  if (std::isfinite(r.load_average) && r.load_average >= kBusyLoad)
    r.warnings.push_back("the host was busy when the series started (1-minute load average " +
                         util::format_number("%.2f", r.load_average) + " on " +
                         std::to_string(r.host_cores) +
                         " cores): other work competes for the cores and the timings are noisy");
  for (const auto& s : r.series) {
    if (s.fit.superlinear || s.fit.slowdown || s.fit.poor)
      for (const auto& n : s.fit.notes)
        if (n.rfind("two rank counts", 0) != 0)
          r.warnings.push_back(to_string(s.mode) + std::string(" Amdahl fit: ") + n);
  }

  r.notes.push_back(
      "all ranks run on this one host and exchange gradients over loopback (c10d): communication "
      "is "
      "cheaper than across a network and compute shares the host's " +
      std::to_string(r.host_cores) + " cores, so these figures describe this box, not a cluster");
  for (const auto& s : r.series) {
    for (const auto& p : s.points) {
      if (p.status == PointStatus::Skipped)
        r.notes.push_back(to_string(p.mode) + (" N=" + std::to_string(p.n)) +
                          " skipped: " + p.note);
      if (!p.shared_with.empty())
        r.notes.push_back(to_string(p.mode) + (" N=" + std::to_string(p.n)) +
                          " is the same run as " + p.shared_with + " N=" + std::to_string(p.n) +
                          " (global batch " + std::to_string(p.global_batch) +
                          "): measured once, shared");
    }
    int first_planned = 0;
    for (const auto& p : s.points)
      if (p.status != PointStatus::Skipped) {
        first_planned = p.n;
        break;
      }
    if (s.ref_n && first_planned && s.ref_n != first_planned)
      r.notes.push_back(
          to_string(s.mode) + (": N=" + std::to_string(first_planned)) +
          " has no measurement, so speed-ups are relative to N=" + std::to_string(s.ref_n));
    if (!s.fit.ok)
      for (const auto& n : s.fit.notes)
        r.notes.push_back(to_string(s.mode) + std::string(" Amdahl fit: ") + n);
  }
  std::string exact;
  for (const auto& s : r.series)
    if (s.fit.ok && s.fit.sizes == 2)
      exact += (exact.empty() ? "" : " and ") + std::string(to_string(s.mode));
  if (!exact.empty())
    r.notes.push_back("the " + exact + " Amdahl fit" +
                      (exact.find(" and ") != std::string::npos ? "s use" : " uses") +
                      " two rank counts, which determine the curve exactly: no goodness of fit "
                      "(measure three or more to check the model)");
  if (const auto* h = r.headline(); h && h->mode == Mode::Weak && h->fit.ok)
    r.notes.push_back(
        "only weak scaling was measured: its P is an effective parallel fraction (weak scaling "
        "follows "
        "Gustafson's law; Amdahl's law describes a fixed global batch)");
  r.exit_code = r.failures.empty() ? kExitPass : kExitRunFailed;
}

ScaleResult run_scaling(const ScaleRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  auto log = [&](const std::string& s) {
    if (req.log) req.log(s);
  };
  if (req.nprocs.empty()) throw UsageError("--nproc: give the rank counts, e.g. --nproc 1,2,4");
  std::vector<int> ns = req.nprocs;
  std::sort(ns.begin(), ns.end());
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] < 1)
      throw UsageError("--nproc: rank counts must be positive (got " + std::to_string(ns[i]) + ")");
    if (i && ns[i] == ns[i - 1])
      throw UsageError("--nproc: " + std::to_string(ns[i]) + " is listed twice");
  }
  if (req.repeats < 1) throw UsageError("--repeats must be at least 1");
  if (req.steps_timed < 1) throw UsageError("--steps-timed must be at least 1");

  const auto base = config::Config::load(req.config, req.sets);  // ConfigError: exit 2
  ScaleResult r;
  r.config = req.config;
  r.name = base.str("run.name");
  r.mode = req.mode;
  r.out_dir = req.out_dir;
  r.nprocs = ns;
  r.repeats = req.repeats;
  r.steps_timed = req.steps_timed;
  r.warmup_steps = base.integer("run.warmup_steps");
  r.profile_window = base.integer("profile.window");
  r.base_batch = base.integer("data.batch_size");
  r.threads_per_rank = base.integer("run.threads");
  r.device = base.str("run.device");
  r.host_cores = util::available_cores();
  double load[1] = {NAN};
  if (::getloadavg(load, 1) == 1) r.load_average = load[0];

  const int64_t steps = base.integer("run.steps");
  r.stop_after = r.warmup_steps + r.profile_window + r.steps_timed;
  if (r.stop_after > steps) {
    const int64_t timed = steps - r.warmup_steps - r.profile_window;
    if (timed < 1)
      throw UsageError(
          req.config + ": run.steps = " + std::to_string(steps) +
          " leaves no timed step after run.warmup_steps = " + std::to_string(r.warmup_steps) +
          " and profile.window = " + std::to_string(r.profile_window));
    r.notes.push_back("--steps-timed " + std::to_string(r.steps_timed) +
                      " does not fit in run.steps = " + std::to_string(steps) +
                      ": each run times " + std::to_string(timed) +
                      " steps (raise run.steps with --set run.steps=N for more)");
    r.stop_after = steps;
    r.steps_timed = timed;
  }

  const std::vector<Mode> modes = req.mode == Mode::Both
                                      ? std::vector<Mode>{Mode::Strong, Mode::Weak}
                                      : std::vector<Mode>{req.mode};
  std::vector<Job> jobs;
  std::map<std::pair<int, int64_t>, size_t> job_of;
  std::map<std::pair<Mode, int>, size_t> point_job;
  for (const Mode m : modes) {
    ScaleSeries s;
    s.mode = m;
    s.points = plan_series(m, ns, r.base_batch);
    for (auto& p : s.points) {
      if (p.status == PointStatus::Skipped) continue;
      auto sets = req.sets;
      sets.push_back("parallel.world_size=" + std::to_string(p.n));
      if (m == Mode::Weak) sets.push_back("data.batch_size=" + std::to_string(p.global_batch));
      try {
        config::Config::load(req.config, sets);
      } catch (const config::ConfigError& e) {
        p.status = PointStatus::Skipped;
        p.note = "the config is invalid at this size: " + std::string(e.what());
        continue;
      }
      const auto key = std::make_pair(p.n, p.global_batch);
      auto it = job_of.find(key);
      if (it == job_of.end()) {
        Job j;
        j.n = p.n;
        j.batch = p.global_batch;
        j.set_batch = m == Mode::Weak;
        j.label = to_string(m) + ("-" + std::to_string(p.n));
        it = job_of.emplace(key, jobs.size()).first;
        jobs.push_back(j);
      } else {
        p.shared_with = jobs[it->second].label.substr(0, jobs[it->second].label.find('-'));
      }
      point_job[{m, p.n}] = it->second;
    }
    r.series.push_back(std::move(s));
  }
  if (jobs.empty()) {
    std::string why;
    for (const auto& s : r.series)
      for (const auto& p : s.points)
        why +=
            "\n  " + std::string(to_string(s.mode)) + " N=" + std::to_string(p.n) + ": " + p.note;
    throw UsageError("no rank count can run:" + why);
  }

  // Interleaved repeats: N ascending, then descending, ...; modes alternate the same way.
  const fs::path out = req.out_dir;
  const int64_t total = static_cast<int64_t>(jobs.size()) * req.repeats;
  int64_t done = 0;
  for (int64_t rep = 0; rep < req.repeats; ++rep) {
    std::vector<int> order = ns;
    std::vector<Mode> morder = modes;
    if (rep % 2 == 1)
      std::reverse(order.begin(), order.end()), std::reverse(morder.begin(), morder.end());
    std::set<size_t> ran;
    for (int n : order) {
      for (const Mode m : morder) {
        auto pj = point_job.find({m, n});
        if (pj == point_job.end() || ran.count(pj->second)) continue;
        ran.insert(pj->second);
        Job& j = jobs[pj->second];
        ++done;
        if (j.failed) continue;
        const fs::path dir = out / j.label / ("repeat-" + std::to_string(rep + 1));
        const int64_t micro = j.batch / j.n;
        log("run " + std::to_string(done) + "/" + std::to_string(total) + ": " + j.label +
            " (global batch " + std::to_string(j.batch) + ", " + std::to_string(micro) +
            " per rank), repeat " + std::to_string(rep + 1) + "/" + std::to_string(req.repeats));
        auto o = run_one(req, j, r.stop_after, dir);
        j.dirs.push_back(dir.string());
        if (!o.ok) {
          j.failed = true;
          j.failure = o.failure;
          r.failures.push_back(j.label + " (N=" + std::to_string(j.n) + ", global batch " +
                               std::to_string(j.batch) + ") repeat " + std::to_string(rep + 1) +
                               " in " + dir.string() + ": " + o.failure);
          log("  failed: " + o.failure);
          continue;
        }
        if (r.env.empty()) r.env = o.summary.env;
        log("  " + util::format_number("%.1f", o.summary.tokens_per_sec) + " tokens/s, comm " +
            util::format_number("%.1f", 100 * share_of(o.summary, "comm")) + "% of the step");
        j.summaries.push_back(o.summary);
      }
    }
  }

  for (auto& s : r.series) {
    for (auto& p : s.points) {
      auto pj = point_job.find({s.mode, p.n});
      if (pj == point_job.end()) continue;
      const Job& j = jobs[pj->second];
      p.run_dirs = j.dirs;
      if (j.failed) {
        p.status = PointStatus::Failed;
        p.note = j.failure;
      }
      for (const auto& sum : j.summaries) {
        p.tokens_per_sec_repeats.push_back(sum.tokens_per_sec);
        p.comm_share_repeats.push_back(share_of(sum, "comm"));
        p.step_ms_p50_repeats.push_back(sum.step_ms.p50);
      }
      // A failed point keeps no partial median: its repeats are not comparable to full ones.
      if (j.failed) p.tokens_per_sec_repeats.clear();
    }
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  finish_result(r);
  return r;
}

}  // namespace lockstep::scale
