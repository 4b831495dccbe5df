#include "harness/serve/server.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "harness/util/clock.h"

namespace lockstep::serve {
namespace {

double seconds(int64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

Server::Server(const ServeConfig& cfg, Service& service, const std::vector<Request>& schedule)
    : cfg_(cfg), service_(service), outcomes_(schedule.size()) {
  for (size_t i = 0; i < schedule.size(); ++i) {
    Outcome& o = outcomes_[i];
    o.id = schedule[i].id, o.lane = schedule[i].lane, o.len = schedule[i].len;
    o.scheduled_s = schedule[i].arrival_s;
    o.fate = schedule[i].lane < 0 ? Fate::Rejected : Fate::Unserved;
  }
  for (const auto& l : cfg_.lanes) {
    Lane lane;
    lane.cfg = l;
    lane.buckets.resize(static_cast<size_t>(bucket_of(l.max_len) + 1));
    lanes_.push_back(std::move(lane));
  }
}

Server::~Server() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& l : lanes_)
    for (auto& w : l.workers)
      if (w.joinable()) w.join();
}

void Server::start(int64_t t0_ns) {
  t0_ns_ = t0_ns;
  for (size_t i = 0; i < lanes_.size(); ++i)
    for (int64_t w = 0; w < lanes_[i].cfg.workers; ++w)
      lanes_[i].workers.emplace_back([this, i] { work(static_cast<int>(i)); });
}

void Server::submit(const Request& r, int64_t now_ns) {
  if (r.lane < 0) return;  // too long for every lane: rejected at the door, never queued
  {
    std::lock_guard<std::mutex> g(mu_);
    outcomes_.at(static_cast<size_t>(r.id)).sent_s = seconds(now_ns - t0_ns_);
    Lane& lane = lanes_[static_cast<size_t>(r.lane)];
    lane.buckets[static_cast<size_t>(bucket_of(r.len))].push_back(Queued{&r, now_ns});
    ++submitted_;
  }
  work_cv_.notify_all();
}

void Server::work(int lane_index) {
  Lane& lane = lanes_[static_cast<size_t>(lane_index)];
  if (lane.cfg.priority > 0)  // this thread's nice value; raising it needs no privilege
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)),
                static_cast<int>(lane.cfg.priority));
  service_.on_worker_start(lane_index);
  const int64_t max_wait_ns = static_cast<int64_t>(lane.cfg.max_wait_ms * 1e6);
  const size_t max_batch = static_cast<size_t>(lane.cfg.max_batch_size);
  std::vector<const Request*> batch;
  std::vector<double> scores;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // The bucket whose oldest request has waited longest.
    std::deque<Queued>* pick = nullptr;
    for (auto& b : lane.buckets)
      if (!b.empty() && (!pick || b.front().enqueued_ns < pick->front().enqueued_ns)) pick = &b;
    if (stop_) break;
    if (!pick) {
      work_cv_.wait(lock);
      continue;
    }
    const int64_t due = pick->front().enqueued_ns + max_wait_ns;
    // A full batch leaves at once (the fullest bucket first); otherwise the oldest at its time.
    for (auto& b : lane.buckets)
      if (b.size() >= max_batch) pick = &b;
    if (pick->size() < max_batch && util::steady_now_ns() < due) {
      work_cv_.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(due)));
      continue;
    }
    batch.clear();
    int64_t padded = 0;
    while (!pick->empty() && batch.size() < max_batch) {
      batch.push_back(pick->front().r);
      padded = std::max(padded, pick->front().r->len);
      pick->pop_front();
    }
    lock.unlock();
    const int64_t start = util::steady_now_ns();
    scores.assign(batch.size(), 0.0);
    service_.run(lane_index, batch, padded, scores);
    const int64_t end = util::steady_now_ns();
    lock.lock();  // outcomes are read under the lock (wait_done)
    for (size_t i = 0; i < batch.size(); ++i) {
      Outcome& o = outcomes_[static_cast<size_t>(batch[i]->id)];
      o.fate = Fate::Served;
      o.started_s = seconds(start - t0_ns_), o.done_s = seconds(end - t0_ns_);
      o.batch_size = static_cast<int64_t>(batch.size()), o.padded_len = padded;
      o.score = scores[i];
    }
    done_ += batch.size();
    done_cv_.notify_all();
  }
}

bool Server::wait_done(int64_t id, int64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto until = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
  return done_cv_.wait_until(lock, until, [&] {
    return outcomes_[static_cast<size_t>(id)].fate == Fate::Served;
  });
}

std::vector<Outcome> Server::finish(int64_t deadline_ns) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto until = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
    done_cv_.wait_until(lock, until, [&] { return done_ >= submitted_; });
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& l : lanes_)
    for (auto& w : l.workers)
      if (w.joinable()) w.join();
  return outcomes_;
}

}  // namespace lockstep::serve
