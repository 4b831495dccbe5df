#include "harness/serve/drive.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "harness/util/clock.h"

namespace lockstep::serve {
namespace {

constexpr int64_t kStartDelayNs = 20'000'000;  // the workers are up before the first arrival

int64_t ns(double s) { return static_cast<int64_t>(s * 1e9); }

void sleep_until_ns(int64_t t) {
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t)));
}

double span(const ServeConfig& cfg, const std::vector<Request>& schedule) {
  return std::max(cfg.duration_s, schedule.empty() ? 0.0 : schedule.back().arrival_s);
}

}  // namespace

Window open_loop(const ServeConfig& cfg, const std::vector<Request>& schedule, Service& service) {
  Server server(cfg, service, schedule);
  const int64_t t0 = util::steady_now_ns() + kStartDelayNs;
  server.start(t0);
  Window w;
  int64_t worst_lag = 0;
  for (const Request& r : schedule) {
    const int64_t due = t0 + ns(r.arrival_s);
    int64_t now = util::steady_now_ns();
    if (now < due) {
      sleep_until_ns(due);
      now = util::steady_now_ns();
    }
    worst_lag = std::max(worst_lag, now - due);
    server.submit(r, now);
  }
  w.duration_s = span(cfg, schedule);
  w.outcomes = server.finish(t0 + ns(w.duration_s + cfg.drain_s));
  w.wall_s = static_cast<double>(util::steady_now_ns() - t0) * 1e-9;
  w.max_send_lag_ms = static_cast<double>(worst_lag) * 1e-6;
  for (Outcome& o : w.outcomes)
    if (o.fate == Fate::Served) o.latency_s = o.done_s - o.scheduled_s;
  return w;
}

Window closed_loop(const ServeConfig& cfg, const std::vector<Request>& schedule,
                   Service& service) {
  Server server(cfg, service, schedule);
  const int64_t t0 = util::steady_now_ns() + kStartDelayNs;
  server.start(t0);
  Window w;
  const int64_t give_up = t0 + ns(span(cfg, schedule) + cfg.drain_s);
  for (const Request& r : schedule) {
    const int64_t due = t0 + ns(r.arrival_s);
    if (util::steady_now_ns() < due) sleep_until_ns(due);
    server.submit(r, util::steady_now_ns());
    if (r.lane >= 0 && !server.wait_done(r.id, give_up)) break;
  }
  w.duration_s = span(cfg, schedule);
  w.outcomes = server.finish(give_up);
  w.wall_s = static_cast<double>(util::steady_now_ns() - t0) * 1e-9;
  for (Outcome& o : w.outcomes)
    if (o.fate == Fate::Served) o.latency_s = o.done_s - o.sent_s;  // from the send: the omission
  return w;
}

}  // namespace lockstep::serve
