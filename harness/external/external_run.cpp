#include "harness/external/external_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "harness/external/external_config.h"
#include "harness/external/metrics_reader.h"
#include "harness/external/placeholders.h"
#include "harness/external/trainer_process.h"
#include "harness/util/files.h"

namespace lockstep::external {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string quoted(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t\"'\\$`") == std::string::npos;
    s += (s.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return s;
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fmt_s(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// The watched run: the trainer, what it has written so far, and how it ends.
class Watch {
 public:
  Watch(const config::Config& cfg, const fs::path& out, const ExternalRunOptions& opts,
        train::StepObserver& observer)
      : cfg_(cfg),
        out_(out),
        opts_(opts),
        observer_(observer),
        tail_(trainer_metrics(out)),
        steps_(cfg.integer("run.steps")),
        warmup_(cfg.integer("run.warmup_steps")) {}

  ExternalOutcome run() {
    auto o = run_trainer();
    if (proc_) {  // stopped or exited: reaped, its group gone
      proc_->stop();
      o.peak_rss_bytes = proc_->max_rss_bytes();
    }
    return o;
  }

 private:
  ExternalOutcome run_trainer() {
    const auto ext = ExternalConfig::from(cfg_);
    const std::map<std::string, std::string> values{
        {"seed", std::to_string(cfg_.integer("run.seed"))},
        {"steps", std::to_string(steps_)},
        {"metrics", fs::absolute(trainer_metrics(out_)).string()},
        {"out", fs::absolute(out_).string()}};
    std::vector<std::string> argv;
    for (const auto& a : ext.command) argv.push_back(expand(a, values));
    std::map<std::string, std::string> env;
    for (const auto& [k, v] : ext.env) env[k] = expand(v, values);
    env["LOCKSTEP_METRICS"] = values.at("metrics");
    env["LOCKSTEP_SEED"] = values.at("seed");
    o_.command_line = quoted(argv);
    fs::create_directories(trainer_metrics(out_).parent_path());
    fs::remove(trainer_metrics(out_));  // never a previous run's lines

    observer_.on_start(1, target());
    try {
      proc_ = std::make_unique<TrainerProcess>(argv, env, ext.workdir, trainer_log(out_));
    } catch (const StartError& e) {
      return fail(RunStatus::Failed, std::string("external trainer: ") + e.what(), 1);
    }
    const auto t0 = Clock::now();
    last_line_ = t0;
    for (;;) {
      const auto exited = proc_->poll();
      const bool clean_exit = exited && exited->code == 0 && !exited->signaled;
      // Read after the exit check: whatever it wrote before exiting is in the file by now. A
      // last line without its '\n' counts once it has exited cleanly (a crash tears lines).
      if (!read_lines(clean_exit)) {
        proc_->stop();
        return o_;
      }
      if (stopped_early()) {  // --stop-after reached: the rest of the schedule is not needed
        if (!exited) proc_->stop();
        return o_;
      }
      if (exited) {
        if (clean_exit && last_step() == steps_) return o_;
        return exited_early(*exited);
      }
      if (auto why = watchdog(t0, ext.timeout_s)) {
        proc_->stop();
        return *why;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  int64_t last_step() const { return o_.records.empty() ? 0 : o_.records.back().step; }
  int64_t target() const { return opts_.stop_after > 0 ? std::min(opts_.stop_after, steps_) : steps_; }
  bool stopped_early() const { return opts_.stop_after > 0 && last_step() >= target(); }

  ExternalOutcome fail(RunStatus status, const std::string& why, int64_t step) {
    o_.status = status;
    o_.failure = why;
    o_.failed_step = step;
    return o_;
  }

  std::string where() const {
    return " (" + fs::absolute(trainer_metrics(out_)).string() + ")";
  }

  // Validates and hands on the new lines; false (o_ says why) at the first bad one.
  bool read_lines(bool at_end) {
    for (const auto& line : tail_.read_new(at_end)) {
      if (stopped_early()) return true;  // past --stop-after: not read
      ExternalStep s;
      try {
        s = parse_step_line(line.text, line.number, last_step());
      } catch (const std::exception& e) {
        fail(RunStatus::Failed, std::string("external trainer metrics") + where() + ": " + e.what(),
             last_step() + 1);
        return false;
      }
      if (s.record.step > steps_) {
        fail(RunStatus::Failed,
             "external trainer metrics" + where() + ": line " + std::to_string(line.number) +
                 ": step " + std::to_string(s.record.step) + " is past run.steps = " +
                 std::to_string(steps_),
             s.record.step);
        return false;
      }
      s.record.timed = s.record.step > warmup_;
      if (s.peak_memory_bytes) o_.peak_memory_bytes = std::max(o_.peak_memory_bytes, *s.peak_memory_bytes);
      o_.records.push_back(s.record);
      observer_.on_step(s.record);
      step_ms_.push_back(s.record.step_ms);
      last_line_ = Clock::now();
      if (!std::isfinite(s.record.loss)) {
        fail(RunStatus::Nonfinite,
             "external trainer: non-finite loss at step " + std::to_string(s.record.step) +
                 " (metrics line " + std::to_string(line.number) + ")",
             s.record.step);
        return false;
      }
    }
    return true;
  }

  // The trainer exited before writing every step it was asked for, or failed after the last.
  ExternalOutcome exited_early(const util::ExitStatus& st) {
    const std::string after =
        last_step() == 0 ? "before writing any step" : "after step " + std::to_string(last_step());
    if (st.code != 0 || st.signaled) {
      const std::string last = util::last_nonempty_line(trainer_log(out_));
      return fail(RunStatus::Failed,
                  "external trainer failed (" + st.describe() + ") " + after +
                      (last.empty() ? "" : ": " + last) + " (log: " +
                      fs::absolute(trainer_log(out_)).string() + ")",
                  last_step() + 1);
    }
    if (!tail_.exists())
      return fail(RunStatus::Failed,
                  "external trainer exited 0 without writing its metrics to {metrics}" + where(),
                  1);
    return fail(RunStatus::Failed,
                "external trainer exited 0 " + after + " of " + std::to_string(target()) +
                    ": fewer steps than asked (it gets them as {steps})",
                last_step() + 1);
  }

  // The watchdog between two lines, and the whole run's limit.
  std::optional<ExternalOutcome> watchdog(Clock::time_point t0, double timeout_s) {
    if (timeout_s > 0 && seconds_since(t0) > timeout_s)
      return fail(RunStatus::Failed,
                  "external trainer still running after " + fmt_s(seconds_since(t0)) +
                      " (external.timeout_s = " + fmt_s(timeout_s) + ") at step " +
                      std::to_string(last_step()),
                  last_step() + 1);
    const double quiet = seconds_since(last_line_);
    const double step_timeout = cfg_.number("run.step_timeout_s");
    const double factor = cfg_.number("run.step_timeout_factor");
    double limit = step_timeout > 0 ? step_timeout : INFINITY;
    std::string rule = "run.step_timeout_s";
    if (factor > 0 && step_ms_.size() >= 5) {
      std::vector<double> v(step_ms_.end() - std::min<size_t>(step_ms_.size(), 50), step_ms_.end());
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      const double by_median = factor * v[v.size() / 2] / 1000.0;
      if (by_median < limit) limit = by_median, rule = "run.step_timeout_factor x median step";
    }
    if (quiet <= limit) return std::nullopt;
    return fail(RunStatus::Hang,
                "watchdog: the external trainer wrote no step for " + fmt_s(quiet) + " (limit " +
                    fmt_s(limit) + ", " + rule + "); last step " + std::to_string(last_step()) +
                    " of " + std::to_string(target()),
                last_step() + 1);
  }

  const config::Config& cfg_;
  fs::path out_;
  ExternalRunOptions opts_;
  train::StepObserver& observer_;
  MetricsTail tail_;
  int64_t steps_, warmup_;
  ExternalOutcome o_;
  std::vector<double> step_ms_;
  Clock::time_point last_line_;
  std::unique_ptr<TrainerProcess> proc_;
};

}  // namespace

fs::path trainer_metrics(const fs::path& out) { return out / "external" / "metrics.jsonl"; }
fs::path trainer_log(const fs::path& out) { return out / "external" / "trainer.log"; }

ExternalOutcome run_external(const config::Config& cfg, const fs::path& out,
                             const ExternalRunOptions& opts, train::StepObserver& observer) {
  return Watch(cfg, out, opts, observer).run();
}

}  // namespace lockstep::external
