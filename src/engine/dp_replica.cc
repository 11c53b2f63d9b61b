#include "engine/dp_replica.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/clock.h"
#include "engine/dp_wire.h"

namespace dss {

namespace {

constexpr int kFront = 0;  // the front's mailbox rank

// The events the engine's sinks produced since the last send (engine thread -> mailbox thread).
struct EventQueue {
  std::mutex mu;
  std::vector<TokenEvent> events;
  void push(TokenEvent&& e) {
    std::lock_guard<std::mutex> lk(mu);
    events.push_back(std::move(e));
  }
  std::vector<TokenEvent> take() {
    std::lock_guard<std::mutex> lk(mu);
    return std::exchange(events, {});
  }
};

// Sends what the engine emitted; forgets the requests that ended. True if anything went out.
bool flush(EventQueue& q, MpiMailbox& mail, std::unordered_map<RequestId, RequestId>& inner) {
  const std::vector<TokenEvent> events = q.take();
  if (events.empty()) return false;
  for (const TokenEvent& e : events) {
    if (e.is_last()) inner.erase(e.id);
  }
  mail.send(kFront, kDpEvents, encode_events(events));
  return true;
}

// The compiled grammars by their bytes (a bounded map: cleared when full).
struct GrammarCache {
  std::shared_ptr<const grammar::TokenVocab> vocab;
  std::unordered_map<std::string, std::shared_ptr<grammar::CompiledGrammar>> by_bytes;

  std::shared_ptr<grammar::CompiledGrammar> get(const std::vector<uint8_t>& bytes) {
    std::string key(bytes.begin(), bytes.end());
    auto it = by_bytes.find(key);
    if (it != by_bytes.end()) return it->second;
    if (by_bytes.size() >= kReplicaGrammarCache) by_bytes.clear();
    auto g = make_grammar(bytes, vocab);
    by_bytes.emplace(std::move(key), g);
    return g;
  }
};

void submit(Engine& engine, EventQueue& q, std::unordered_map<RequestId, RequestId>& inner,
            GrammarCache& grammars, std::span<const uint8_t> bytes) {
  WireRequest w = decode_request(bytes);
  const RequestId id = w.id;
  const auto n_prompt = static_cast<int32_t>(w.req.prompt.size());
  Result<RequestId> r = Status::error("grammar: this replica has no tokenizer");
  if (w.grammar.empty() || grammars.vocab != nullptr) {
    if (!w.grammar.empty()) w.req.grammar = grammars.get(w.grammar);
    r = engine.submit(std::move(w.req), [&q, id](TokenEvent&& e) {
      e.id = id;
      q.push(std::move(e));
    });
  }
  if (r) {
    inner[id] = *r;
    return;
  }
  TokenEvent e;  // checked by the front already: only a shutting-down engine refuses
  e.id = id;
  e.error = r.message();
  e.error_kind = RequestError::kRejected;
  e.n_prompt = n_prompt;
  q.push(std::move(e));
}

// The replica's side of the mailbox: requests in, events and statistics out.
struct ReplicaServer {
  Engine& engine;
  MpiMailbox& mail;
  EventQueue q;
  GrammarCache grammars;
  std::unordered_map<RequestId, RequestId> inner;  // front id -> engine id, in flight
  double next_stats = 0.0;
  bool stop_seen = false;

  // One round: what arrived goes to the engine (the front's stop: request_stop), what the engine
  // emitted goes out, and the statistics when due. True if anything moved.
  bool poll_once() {
    bool moved = false;
    while (!stop_seen) {
      std::optional<MpiMailbox::Message> m = mail.poll();
      if (!m) break;
      moved = true;
      DSS_CHECK(m->source == kFront, "replica leader: a message from mailbox rank ", m->source);
      if (m->tag == kDpRequest) {
        submit(engine, q, inner, grammars, m->bytes);
      } else if (m->tag == kDpCancel) {
        auto it = inner.find(decode_id(m->bytes));
        if (it != inner.end()) engine.cancel(it->second);
      } else {
        DSS_CHECK(m->tag == kDpStop, "replica leader: unexpected tag ", m->tag);
        engine.request_stop();  // the kAbort events of what is left follow
        stop_seen = true;
      }
    }
    moved |= flush(q, mail, inner);
    const double now = now_seconds();
    if (now >= next_stats) {
      mail.send(kFront, kDpStats, encode_stats(engine.stats()));
      next_stats = now + kDpStatsEveryS;
    }
    return moved;
  }

  // After the engine thread ended: the last events, then the bye.
  void finish() {
    flush(q, mail, inner);
    mail.send(kFront, kDpBye, {});
  }
};

}  // namespace

void serve_replica(Engine& engine, MpiMailbox& mail,
                   std::shared_ptr<const grammar::TokenVocab> vocab) {
  DSS_CHECK(mail.rank() > 0, "serve_replica on the front's rank");
  ReplicaServer rs{engine, mail, {}, {std::move(vocab), {}}, {}};
  if (engine.calls_collectives()) {  // the engine thread polls, between its steps or rounds
    engine.set_round_hook([&rs] { rs.poll_once(); });
    engine.join();  // the front's stop (under DP attention: then every rank's engine stopped)
  } else {
    int64_t pause_us = kDpPollMinUs;
    while (!rs.stop_seen) {
      pause_us = next_dp_pause_us(pause_us, rs.poll_once());
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    }
    engine.join();
  }
  rs.finish();
}

}  // namespace dss
