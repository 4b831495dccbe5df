#include "harness/train/watchdog.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "harness/util/clock.h"

namespace lockstep::train {

Watchdog::Watchdog(Progress& progress, int rank, double timeout_s, double factor,
                   std::function<void(const std::string&)> on_hang)
    : progress_(progress),
      rank_(rank),
      timeout_s_(timeout_s),
      factor_(factor),
      on_hang_(std::move(on_hang)) {
  if (timeout_s_ > 0 || factor_ > 0) thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::step_done(double step_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  recent_ms_.push_back(step_ms);
  if (recent_ms_.size() > 50) recent_ms_.erase(recent_ms_.begin());
}

void Watchdog::loop() {
  using namespace std::chrono;
  while (!stop_) {
    std::this_thread::sleep_for(milliseconds(100));
    const Phase phase = progress_.phase.load();
    if (!watched(phase)) continue;  // turn: the peer's step
    const int64_t started = progress_.step_started_ns.load();
    if (started == 0) continue;
    const double elapsed_s = static_cast<double>(util::steady_now_ns() - started) / 1e9;
    double limit = timeout_s_ > 0 ? timeout_s_ : 1e300;
    std::string why = "run.step_timeout_s = " + std::to_string(timeout_s_);
    // The factor judges steps against steps; a checkpoint save (whose clock restarts when it
    // begins) is judged by step_timeout_s alone.
    if (factor_ > 0 && phase != Phase::Checkpoint) {
      std::lock_guard<std::mutex> lock(mu_);
      if (recent_ms_.size() >= 5) {
        std::vector<double> v = recent_ms_;
        std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
        const double by_median = factor_ * v[v.size() / 2] / 1000.0;
        if (by_median < limit) limit = by_median, why = "run.step_timeout_factor x median step";
      }
    }
    if (elapsed_s <= limit) continue;
    std::string collective = progress_.in_flight ? progress_.in_flight() : "";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "rank %d: watchdog: step %lld has run %.3g s (limit %.3g s, %s) in phase %s%s",
                  rank_, static_cast<long long>(progress_.step.load()), elapsed_s, limit,
                  why.c_str(), phase_name(phase),
                  collective.empty() ? ", not in a collective"
                                     : (", waiting in collective " + collective).c_str());
    std::fprintf(stderr, "%s\n", buf);
    std::fflush(stderr);
    try {
      if (on_hang_) on_hang_(buf);  // writes the summary: must not terminate() on a write error
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: watchdog: could not write the summary: %s\n", rank_, e.what());
    }
    std::_Exit(3);
  }
}

}  // namespace lockstep::train
