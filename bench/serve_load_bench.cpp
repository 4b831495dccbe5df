// Is the load generator ever the bottleneck? (issue 37: it must sustain >= 50,000 scheduled
// requests/s on one core against a no-op service.) Open loop at RATE for SECONDS, process pinned
// to CPU 0 (client, batcher and worker share it), a service that returns at once. Prints the
// achieved submit rate, the send lag percentiles (how late a request was handed over after its
// scheduled time) and the end-to-end P50/P99 of the no-op service (what the harness itself adds).
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "harness/serve/drive.h"
#include "harness/serve/figures.h"
#include "harness/serve/load.h"

namespace {

class NoOp : public lockstep::serve::Service {
 public:
  void run(int, const std::vector<const lockstep::serve::Request*>& batch, int64_t,
           std::vector<double>& scores) override {
    for (size_t i = 0; i < batch.size(); ++i) scores[i] = 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep::serve;
  const double rate = argc > 1 ? std::atof(argv[1]) : 50000;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 5;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof one, &one);
  ServeConfig cfg;
  cfg.rate_rps = rate, cfg.duration_s = seconds, cfg.long_share = 0;
  cfg.lanes.push_back(LaneConfig{"one", 1, 128, 0, 64, 1.0, 1});
  const auto schedule = make_schedule(cfg, 1);
  NoOp svc;
  const Window w = open_loop(cfg, schedule, svc);
  std::vector<double> lag;
  double last_sent = 0;
  int64_t unserved = 0;
  for (const auto& o : w.outcomes) {
    lag.push_back((o.sent_s - o.scheduled_s) * 1e3);
    last_sent = std::max(last_sent, o.sent_s);
    unserved += o.fate != Fate::Served;
  }
  const auto f = window_figures(cfg, w.outcomes, w.duration_s).front();
  std::sort(lag.begin(), lag.end());
  auto q = [&](double p) { return lag[static_cast<size_t>(p * static_cast<double>(lag.size() - 1))]; };
  std::printf(
      "rate %.0f/s for %.1f s on one core: %zu requests scheduled, handed over at %.0f/s "
      "(last at %.3f s), unserved %lld; send lag ms P50 %.3f P99 %.3f max %.3f; no-op service "
      "latency ms P50 %.3f P99 %.3f, mean batch %.1f\n",
      rate, seconds, schedule.size(), static_cast<double>(schedule.size()) / last_sent, last_sent,
      static_cast<long long>(unserved), q(0.5), q(0.99), lag.back(), f.p50.ms, f.p99.ms,
      f.mean_batch);
  return 0;
}
