#include "reports/run_progress.h"

#include <cmath>
#include <cstdio>

namespace lockstep::reports {

Progress::Progress(std::string name, int64_t log_every, bool tty)
    : name_(std::move(name)), log_every_(log_every), tty_(tty) {}

void Progress::on_start(int64_t first_step, int64_t last_step) {
  first_ = first_step, last_ = last_step;
  t0_ = std::chrono::steady_clock::now();
}

void Progress::on_step(const StepRecord& r) {
  if (r.timed) timed_ms_ += r.step_ms, timed_tokens_ += r.tokens;
  const bool last = r.step == last_ || !std::isfinite(r.loss);
  if (!tty_ && !last && r.step % log_every_ != 0 && r.step != first_) return;
  // Warmup and profiled steps are never timed: before the first timed step there is no
  // throughput to show, and "0 tok/s" would claim one.
  char tok_s[48] = "tok/s n/a (not timed yet)";
  if (timed_ms_ > 0)
    std::snprintf(tok_s, sizeof tok_s, "%.0f tok/s",
                  static_cast<double>(timed_tokens_) / (timed_ms_ / 1000.0));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  const double done = static_cast<double>(r.step - first_ + 1),
               left = static_cast<double>(last_ - r.step);
  const double eta = done > 0 ? elapsed / done * left : 0;
  std::fprintf(stdout, "%s%s step %lld/%lld  loss %.4f  %s  ETA %.0fs%s", tty_ ? "\r\033[K" : "",
               name_.c_str(), static_cast<long long>(r.step), static_cast<long long>(last_), r.loss,
               tok_s, eta, tty_ && !last ? "   " : "\n");
  std::fflush(stdout);
}

}  // namespace lockstep::reports
