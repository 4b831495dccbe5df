// The server (issue 37): per lane, a dynamic batcher and its workers. A request joins its lane's
// queue for its length bucket; a worker takes a batch when the bucket holds max_batch_size
// requests or its oldest has waited max_wait_ms, pads it to its longest request (padding is
// counted) and runs it through the Service. Lanes run their workers at their priority (nice).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/serve/load.h"
#include "harness/vocab/serve_config.h"

namespace lockstep::serve {

// What the server runs: the model in inference mode (harness/serve/model), or a test's stand-in.
class Service {
 public:
  virtual ~Service() = default;
  // Once on each worker thread before its first batch (thread-local state: grad mode, autocast).
  virtual void on_worker_start(int lane) { (void)lane; }
  // One batch, requests right-padded to padded_len tokens: scores[i] for batch[i]. Called from
  // several worker threads at once.
  virtual void run(int lane, const std::vector<const Request*>& batch, int64_t padded_len,
                   std::vector<double>& scores) = 0;
};

enum class Fate { Served, Unserved, Rejected };

// One request's fate; times in seconds from the load's start (t0).
struct Outcome {
  int64_t id = 0;
  int lane = -1;
  int64_t len = 0;
  Fate fate = Fate::Unserved;
  double scheduled_s = 0;  // when it was due (open loop: its latency counts from here)
  double sent_s = 0;       // when the client handed it over (late when the client fell behind)
  double started_s = -1;   // its batch started
  double done_s = -1;      // its batch finished
  int64_t batch_size = 0, padded_len = 0;
  double score = 0;
  double latency_s = -1;  // done - the time latency is measured from (the driver says which)
};

class Server {
 public:
  // `schedule[i].id == i`; the outcomes start from it (what is never submitted stays Unserved).
  Server(const ServeConfig& cfg, Service& service, const std::vector<Request>& schedule);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start(int64_t t0_ns);
  // Thread-safe. `r` must outlive the server. A request with no lane is recorded as rejected.
  void submit(const Request& r, int64_t now_ns);
  // Blocks until request `id` is done or deadline_ns passes; true when done.
  bool wait_done(int64_t id, int64_t deadline_ns);
  // Waits until every submitted request is done or deadline_ns passes, stops the workers (a batch
  // under way finishes), and returns every outcome by request id; what never ran is Unserved.
  std::vector<Outcome> finish(int64_t deadline_ns);

 private:
  struct Queued {
    const Request* r;
    int64_t enqueued_ns;
  };
  struct Lane {
    LaneConfig cfg;
    std::vector<std::deque<Queued>> buckets;
    std::vector<std::thread> workers;
  };
  void work(int lane);
  int64_t bucket_of(int64_t len) const { return (len - 1) / cfg_.bucket_tokens; }

  ServeConfig cfg_;
  Service& service_;
  int64_t t0_ns_ = 0;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  bool stop_ = false;
  size_t submitted_ = 0, done_ = 0;
  std::vector<Lane> lanes_;
  std::vector<Outcome> outcomes_;
};

}  // namespace lockstep::serve
