#include "engine/dp_front.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <utility>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/str_cat.h"
#include "engine/dp_wire.h"

namespace dss {

namespace {

// After on_stall, time for the answers to reach the clients before the process exits.
constexpr double kFlushS = 0.3;

}  // namespace

DpFront::DpFront(Engine& local, MpiMailbox& mail, std::vector<int> leader_world_ranks,
                 const DpRouterOptions& router, double silent_limit_s, DpDrive drive)
    : local_(local),
      mail_(mail),
      leader_world_ranks_(std::move(leader_world_ranks)),
      silent_limit_s_(silent_limit_s > 0 ? silent_limit_s : kDpSilentLimitS),
      drive_(drive),
      n_replicas_(mail.size()),
      router_(router) {
  DSS_CHECK(mail.rank() == 0 && router.n_replicas == n_replicas_ &&
                static_cast<int32_t>(leader_world_ranks_.size()) == n_replicas_,
            "DpFront: mailbox rank ", mail.rank(), ", ", n_replicas_, " replicas");
  load_.assign(static_cast<size_t>(n_replicas_), 0);
  routed_.assign(static_cast<size_t>(n_replicas_), 0);
  remote_stats_.resize(static_cast<size_t>(n_replicas_));
  last_heard_.assign(static_cast<size_t>(n_replicas_), now_seconds());
  heard_.assign(static_cast<size_t>(n_replicas_), false);
  longest_gap_.assign(static_cast<size_t>(n_replicas_), 0.0);
  if (drive_ == DpDrive::kOwnThread) thread_ = std::thread([this] { run(); });
}

DpFront::~DpFront() {
  // A leader that never answered leaves the thread polling: the process is exiting on that error.
  if (!stop() && thread_.joinable()) thread_.detach();
}

Result<RequestId> DpFront::submit(GenerateRequest req, EventSink sink) {
  DSS_RETURN_IF_ERROR(local_.validate(req));
  const RequestId id = next_id_.fetch_add(1);
  std::lock_guard<std::mutex> lk(mu_);
  if (stopping_) return Status::error("engine is shutting down");
  const int32_t r = router_.route(req.prompt, load_);
  routed_[static_cast<size_t>(r)]++;
  Route route{r, id, std::move(sink), now_seconds()};
  if (r != 0) {
    outbox_.push_back({r, kDpRequest, encode_request(id, req)});
    routes_.emplace(id, std::move(route));
    load_[static_cast<size_t>(r)]++;
    return id;
  }
  // The local engine's events: the front's id, and the route closed on the last one. Its sinks
  // run on the engine thread, which never holds the engine's lock while calling them, so holding
  // mu_ across submit() cannot deadlock with this sink taking it.
  EventSink local_sink = [this, id](TokenEvent&& e) {
    EventSink sink;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = routes_.find(id);
      if (it == routes_.end()) return;
      sink = it->second.sink;
      if (e.is_last()) finish(id, 0);
    }
    e.id = id;
    sink(std::move(e));
  };
  routes_.emplace(id, std::move(route));
  load_[0]++;
  Result<RequestId> inner = local_.submit(std::move(req), std::move(local_sink));
  if (!inner) {
    finish(id, 0);
    return inner.status();
  }
  routes_[id].inner = *inner;
  return id;
}

void DpFront::finish(RequestId id, int32_t replica) {
  routes_.erase(id);
  load_[static_cast<size_t>(replica)]--;
}

void DpFront::cancel(RequestId id) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = routes_.find(id);
  if (it == routes_.end()) return;
  if (it->second.replica == 0) {
    local_.cancel(it->second.inner);
  } else {
    outbox_.push_back({it->second.replica, kDpCancel, encode_id(id)});
  }
}

EngineStats DpFront::stats() const {
  EngineStats s = local_.stats();
  auto replica = [&](int32_t r, const EngineStats& e) {
    return ReplicaStats{routed_[static_cast<size_t>(r)], e.n_running, e.n_waiting, e.kv_pages_used,
                        e.generation_tokens};
  };
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<ReplicaStats> replicas = {replica(0, s)};
  for (int32_t r = 1; r < n_replicas_; ++r) {
    const EngineStats& e = remote_stats_[static_cast<size_t>(r)];
    add_replica_stats(s, e);
    replicas.push_back(replica(r, e));
  }
  s.replicas = std::move(replicas);
  return s;
}

void DpFront::set_on_stall(std::function<void(const std::string&)> on_stall) {
  local_.set_on_stall(on_stall);
  std::lock_guard<std::mutex> lk(mu_);
  on_stall_ = std::move(on_stall);
}

void DpFront::expect_shutdown() {
  local_.expect_shutdown();
  std::function<void(const std::string&)> f;
  {
    std::lock_guard<std::mutex> lk(mu_);
    f = on_stall_;
  }
  if (f)
    f("the parallel job is ending (mpirun signalled this rank: a rank is gone, or mpirun "
      "was stopped); requests on other replicas cannot finish");
}

void DpFront::request_stop() {
  std::lock_guard<std::mutex> lk(mu_);
  if (stopping_) return;
  stopping_ = true;
  for (int32_t r = 1; r < n_replicas_; ++r) outbox_.push_back({r, kDpStop, {}});
}

bool DpFront::stop(double timeout_s) {
  request_stop();
  const double deadline = now_seconds() + timeout_s;
  while (!done_.load() && now_seconds() < deadline) {
    if (drive_ != DpDrive::kOwnThread) poll_once();  // the caller's thread (the engine's ended)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!done_.load()) {
    log_error("data-parallel front: ", n_replicas_ - 1 - n_byes_,
              " replica leader(s) did not answer the stop within ", timeout_s, " s");
    return false;
  }
  if (thread_.joinable()) thread_.join();
  return true;
}

void DpFront::on_events(int32_t replica, std::vector<TokenEvent> events) {
  const double now = now_seconds();
  for (TokenEvent& e : events) {
    EventSink sink;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = routes_.find(e.id);
      if (it == routes_.end()) continue;
      sink = it->second.sink;
      const double waited = e.t_scheduled > 0 ? e.t_scheduled - e.t_arrival : -1.0;
      e.t_arrival = it->second.t_submit;
      e.t_scheduled = waited >= 0 ? e.t_arrival + waited : 0.0;
      e.t_event = now;
      if (e.is_last()) finish(e.id, replica);
    }
    sink(std::move(e));
  }
}

bool DpFront::wait_ready() {
  const double deadline = now_seconds() + kDpStartLimitS;
  for (;;) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      int32_t missing = 0;
      for (int32_t r = 1; r < n_replicas_; ++r) missing += heard_[static_cast<size_t>(r)] ? 0 : 1;
      if (missing == 0) return true;
      if (now_seconds() > deadline) {
        for (int32_t r = 1; r < n_replicas_; ++r) {
          if (!heard_[static_cast<size_t>(r)])
            log_error("data-parallel front: rank ", leader_world_ranks_[static_cast<size_t>(r)],
                      " (leader of replica ", r, ") not ready after ", kDpStartLimitS, " s");
        }
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void DpFront::check_silence(double now) {
  std::string why;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_) return;  // a stopping leader aborts its requests, then says bye
    for (int32_t r = 1; r < n_replicas_ && why.empty(); ++r) {
      const auto i = static_cast<size_t>(r);
      const double silent = now - last_heard_[i];
      double limit = heard_[i] ? silent_limit_s_ : kDpStartLimitS;
      if (drive_ == DpDrive::kBetweenSteps) limit = std::max(limit, kDpGapFactor * longest_gap_[i]);
      if (silent > limit) {
        why = str_cat("rank ", leader_world_ranks_[static_cast<size_t>(r)], " (leader of replica ",
                      r, ") sent nothing for ", silent, " s (limit ", limit,
                      " s): it is gone or hung; exiting");
      }
    }
  }
  if (!why.empty()) fail(why);
}

void DpFront::fail(const std::string& why) {
  log_error(why);
  std::function<void(const std::string&)> f;
  {
    std::lock_guard<std::mutex> lk(mu_);
    f = on_stall_;
  }
  if (f) {
    f(why);
    std::this_thread::sleep_for(std::chrono::duration<double>(kFlushS));
  }
  std::_Exit(3);
}

bool DpFront::poll_once() {
  if (done_.load()) return false;
  std::deque<Outgoing> out;
  {
    std::lock_guard<std::mutex> lk(mu_);
    out.swap(outbox_);
  }
  for (const Outgoing& o : out) mail_.send(o.replica, o.tag, o.bytes);
  bool moved = !out.empty();
  while (std::optional<MpiMailbox::Message> m = mail_.poll()) {
    moved = true;
    const int32_t r = m->source;
    DSS_CHECK(r > 0 && r < n_replicas_, "data-parallel front: a message from mailbox rank ", r);
    {
      std::lock_guard<std::mutex> lk(mu_);
      const auto i = static_cast<size_t>(r);
      const double now = now_seconds();
      if (heard_[i]) longest_gap_[i] = std::max(longest_gap_[i], now - last_heard_[i]);
      last_heard_[i] = now;
      heard_[i] = true;
      if (m->tag == kDpStats) remote_stats_[static_cast<size_t>(r)] = decode_stats(m->bytes);
      if (m->tag == kDpBye) n_byes_++;
    }
    if (m->tag == kDpEvents) on_events(r, decode_events(m->bytes));
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stopping_ && n_byes_ == n_replicas_ - 1 && outbox_.empty()) {
      done_.store(true);
      return moved;
    }
  }
  // DP attention: the ranks step in lockstep, so a silent leader stalls this rank's collective
  // and the step watchdog, whose limit follows the step times, ends the job; a fixed silence
  // limit would misfire on a step longer than it.
  if (drive_ != DpDrive::kLockstep) check_silence(now_seconds());
  return moved;
}

void DpFront::run() {
  int64_t pause_us = kDpPollMinUs;
  while (!done_.load()) {
    pause_us = next_dp_pause_us(pause_us, poll_once());
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
  }
}

}  // namespace dss
