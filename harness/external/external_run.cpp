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
#include "harness/external/turn_relay.h"
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

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// The trainer's command and environment: the placeholders, the metrics file, and what protocol 2
// asks of this run (docs/protocol.md): weight noise, checkpoint steps, a probe.
struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

Launch launch(const config::Config& cfg, const fs::path& out, const ExternalRunOptions& opts) {
  const auto ext = ExternalConfig::from(cfg);
  const std::map<std::string, std::string> values{
      {"seed", std::to_string(cfg.integer("run.seed"))},
      {"steps", std::to_string(cfg.integer("run.steps"))},
      {"metrics", fs::absolute(trainer_metrics(out)).string()},
      {"out", fs::absolute(out).string()}};
  Launch l;
  for (const auto& a : ext.command) l.argv.push_back(expand(a, values));
  for (const auto& [k, v] : ext.env) l.env[k] = expand(v, values);
  l.env["LOCKSTEP_METRICS"] = values.at("metrics");
  l.env["LOCKSTEP_SEED"] = values.at("seed");
  l.env["LOCKSTEP_PROTOCOL"] = "2";
  if (const double u = cfg.number("faults.weight_rounding_noise"); u > 0) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", u);
    l.env["LOCKSTEP_WEIGHT_NOISE"] = buf;
    l.env["LOCKSTEP_NOISE_SEED"] = std::to_string(cfg.integer("faults.noise_seed"));
  }
  if (!opts.checkpoint_steps.empty()) {
    std::vector<std::string> steps;
    for (auto st : opts.checkpoint_steps) steps.push_back(std::to_string(st));
    l.env["LOCKSTEP_CHECKPOINT_STEPS"] = join(steps);
    l.env["LOCKSTEP_CHECKPOINT_DIR"] = fs::absolute(opts.checkpoint_dir).string();
  }
  if (!opts.probe_out.empty()) {
    std::vector<std::string> paths;
    for (const auto& p : opts.probe_checkpoints) paths.push_back(fs::absolute(p).string());
    l.env["LOCKSTEP_PROBE_CHECKPOINTS"] = join(paths);
    l.env["LOCKSTEP_PROBE_OUT"] = fs::absolute(opts.probe_out).string();
    l.env["LOCKSTEP_PROBE_BATCHES"] = std::to_string(opts.probe_batches);
  }
  return l;
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
    if (relay_) {
      o.turns_ended = relay_->ended();
      relay_.reset();  // whatever happened, the peer goes on alone from here
    }
    return o;
  }

 private:
  ExternalOutcome run_trainer() {
    const auto ext = ExternalConfig::from(cfg_);
    auto l = launch(cfg_, out_, opts_);
    o_.command_line = quoted(l.argv);
    fs::create_directories(trainer_metrics(out_).parent_path());
    fs::remove(trainer_metrics(out_));  // never a previous run's lines
    // A timing run taking turns: the trainer gets a socket of its own as its fd 3.
    std::vector<std::pair<int, int>> fds;
    relay_ = TurnRelay::from_env(std::max(600.0, 2 * cfg_.number("run.step_timeout_s")));
    if (relay_) {
      l.env["LOCKSTEP_TURN_FD"] = "3";
      fds.emplace_back(relay_->trainer_fd(), 3);
    }

    observer_.on_start(1, target());
    try {
      proc_ = std::make_unique<TrainerProcess>(l.argv, l.env, ext.workdir, trainer_log(out_), fds);
    } catch (const StartError& e) {
      return fail(RunStatus::Failed, std::string("external trainer: ") + e.what(), 1);
    }
    if (relay_) relay_->trainer_started();
    const auto t0 = Clock::now();
    mark_line(t0);
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
        // Taking turns: the peer's step that follows this run's last ends before the teardown.
        if (relay_ && !exited) relay_->finish_after_peer(std::max(60.0, cfg_.number("run.step_timeout_s")));
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

  void mark_line(Clock::time_point t) {
    last_line_ = t;
    wait_at_line_ns_ = relay_ ? relay_->peer_wait_ns() : 0;
  }

  // The first line: a hello (protocol 2) or a step (protocol 1, metrics only). What the run asks
  // of the trainer must be what it announced; false (o_ says why) when it is not.
  bool hello(const MetricsTail::Line& line, bool* only_hello) {
    std::optional<TrainerProtocol> h;
    try {
      h = parse_hello(line.text, line.number, only_hello);
    } catch (const std::exception& e) {
      fail(RunStatus::Failed, std::string("external trainer metrics") + where() + ": " + e.what(), 1);
      return false;
    }
    if (h) o_.protocol = *h;
    const auto& p = o_.protocol;
    if (relay_ && p.has(Capability::Turns)) relay_->accept();
    if (relay_ && !p.has(Capability::Turns))
      relay_->decline("the trainer does not announce turns (protocol " + std::to_string(p.version) + ")");
    if (cfg_.number("faults.weight_rounding_noise") > 0 && !p.has(Capability::Noise)) {
      fail(RunStatus::Failed,
           "external trainer: this run asks for weight noise (faults.weight_rounding_noise, "
           "LOCKSTEP_WEIGHT_NOISE) but the trainer does not announce \"noise\" (protocol " +
               std::to_string(p.version) + "; docs/protocol.md)",
           1);
      return false;
    }
    return true;
  }

  // Validates and hands on the new lines; false (o_ says why) at the first bad one.
  bool read_lines(bool at_end) {
    for (const auto& line : tail_.read_new(at_end)) {
      if (stopped_early()) return true;  // past --stop-after: not read
      if (!hello_seen_) {
        hello_seen_ = true;
        bool only_hello = false;
        if (!hello(line, &only_hello)) return false;
        if (only_hello) continue;
      }
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
      if (o_.protocol.observed_compute.empty()) o_.protocol.observed_compute = s.observed_compute;
      o_.records.push_back(s.record);
      observer_.on_step(s.record);
      step_ms_.push_back(s.record.step_ms);
      mark_line(Clock::now());
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
    // The time this run waited for its peer's steps (turns) is not the trainer's.
    const double quiet =
        seconds_since(last_line_) -
        (relay_ ? static_cast<double>(relay_->peer_wait_ns() - wait_at_line_ns_) / 1e9 : 0.0);
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
    const double held = relay_ ? relay_->held_s() : 0.0;
    return fail(RunStatus::Hang,
                "watchdog: the external trainer wrote no step for " + fmt_s(quiet) + " (limit " +
                    fmt_s(limit) + ", " + rule + "); last step " + std::to_string(last_step()) +
                    " of " + std::to_string(target()) +
                    (held > 0 ? "; it has held the turn for " + fmt_s(held) +
                                    " without handing it back (LOCKSTEP_TURN_FD)"
                              : ""),
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
  int64_t wait_at_line_ns_ = 0;  // the relay's peer wait at last_line_
  bool hello_seen_ = false;
  std::unique_ptr<TurnRelay> relay_;  // declared before proc_: the trainer stops first
  std::unique_ptr<TrainerProcess> proc_;
};

}  // namespace

fs::path trainer_metrics(const fs::path& out) { return out / "external" / "metrics.jsonl"; }
fs::path trainer_log(const fs::path& out) { return out / "external" / "trainer.log"; }

ExternalOutcome run_external(const config::Config& cfg, const fs::path& out,
                             const ExternalRunOptions& opts, train::StepObserver& observer) {
  return Watch(cfg, out, opts, observer).run();
}

ExternalOutcome run_external_probe(const config::Config& cfg, const fs::path& out,
                                   const ExternalRunOptions& opts) {
  ExternalOutcome o;
  auto failed = [&](const std::string& why) {
    o.status = RunStatus::Failed;
    o.failure = why;
    o.failed_step = 1;
    return o;
  };
  const auto ext = ExternalConfig::from(cfg);
  const auto l = launch(cfg, out, opts);
  o.command_line = quoted(l.argv);
  fs::create_directories(trainer_metrics(out).parent_path());
  fs::remove(trainer_metrics(out));
  fs::remove(opts.probe_out / "probe.json");  // never a previous probe's index
  std::unique_ptr<TrainerProcess> proc;
  try {
    proc = std::make_unique<TrainerProcess>(l.argv, l.env, ext.workdir, trainer_log(out));
  } catch (const StartError& e) {
    return failed(std::string("external trainer: ") + e.what());
  }
  // Forwards only: as long as a few steps would take, at most.
  const double limit =
      ext.timeout_s > 0 ? ext.timeout_s
                        : cfg.number("run.step_timeout_s") * static_cast<double>(1 + opts.probe_checkpoints.size());
  const auto t0 = Clock::now();
  MetricsTail tail(trainer_metrics(out));
  for (;;) {
    const auto exited = proc->poll();
    for (const auto& line : tail.read_new(exited.has_value())) {
      bool only_hello = false;
      try {
        if (parse_hello(line.text, line.number, &only_hello) && only_hello) continue;
      } catch (const std::exception&) {
      }
      proc->stop();
      return failed("external trainer: asked for a probe (LOCKSTEP_PROBE_OUT), it trained instead (" +
                    fs::absolute(trainer_metrics(out)).string() + " line " +
                    std::to_string(line.number) + "): it does not support \"probe\"");
    }
    if (exited) {
      o.peak_rss_bytes = proc->max_rss_bytes();
      if (exited->code != 0 || exited->signaled) {
        const std::string last = util::last_nonempty_line(trainer_log(out));
        return failed("external trainer failed in its probe (" + exited->describe() + ")" +
                      (last.empty() ? "" : ": " + last) + " (log: " +
                      fs::absolute(trainer_log(out)).string() + ")");
      }
      return o;
    }
    if (seconds_since(t0) > limit) {
      proc->stop();
      return failed("external trainer: its probe still runs after " + fmt_s(seconds_since(t0)) +
                    " (limit " + fmt_s(limit) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace lockstep::external
