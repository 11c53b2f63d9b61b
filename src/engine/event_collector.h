// EventCollector: a thread-safe sink that gathers each request's events, for the CLI and tests
// (the server streams events instead). Blocking waits happen on the consumer's thread only.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "core/generate.h"

namespace dss {

class EventCollector {
 public:
  struct Output {
    std::vector<TokenId> tokens;
    std::vector<TokenEvent> events;
    bool done = false;
    TokenEvent last;
    double t_first_token = 0.0;
  };

  EventSink sink() {
    return [this](TokenEvent&& e) {
      std::lock_guard<std::mutex> lk(mu_);
      Output& o = out_[e.id];
      if (e.has_token) {
        if (o.tokens.empty()) o.t_first_token = e.t_event;
        o.tokens.push_back(e.token);
      }
      if (e.is_last()) {
        o.done = true;
        o.last = e;
        ++n_done_;
      }
      o.events.push_back(std::move(e));
      cv_.notify_all();
    };
  }
  // Waits until `n` requests have finished.
  void wait_done(int n) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return n_done_ >= n; });
  }
  // Waits until request `id` has at least `n_tokens` tokens or is done.
  void wait_tokens(RequestId id, size_t n_tokens) {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait(lk, [&] { return out_[id].done || out_[id].tokens.size() >= n_tokens; });
  }
  Output get(RequestId id) {
    std::lock_guard<std::mutex> lk(mu_);
    return out_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<RequestId, Output> out_;
  int n_done_ = 0;
};

}  // namespace dss
