// The messages between the data-parallel front (engine/dp_front.h) and the replica leaders
// (engine/dp_replica.h), as bytes for MpiMailbox: a request (an output grammar as its lowered
// Bnf and options, which the replica binds to its own copy of the vocabulary), a cancel, a batch
// of token events, a replica's statistics. Fields are copied in the host's layout: every rank runs
// the same binary on the same architecture. A message that does not decode is an invariant
// violation (CHECK): only ranks of the same job send them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/generate.h"
#include "engine/engine.h"
#include "grammar/compiled_grammar.h"

namespace dss {

// The mailbox threads' pacing, both sides: a pause doubling from kDpPollMinUs to kDpPollMaxUs
// while nothing moves, so a busy replica's events go at once and an idle job costs ~1,000 polls
// a second per thread; each replica leader's statistics every kDpStatsEveryS.
inline constexpr int64_t kDpPollMinUs = 20, kDpPollMaxUs = 1000;
inline constexpr double kDpStatsEveryS = 0.2;

// The pause after a round of polling in which `moved` says whether anything was sent or received.
inline int64_t next_dp_pause_us(int64_t pause_us, bool moved) {
  return moved ? kDpPollMinUs : (2 * pause_us < kDpPollMaxUs ? 2 * pause_us : kDpPollMaxUs);
}

enum DpTag : int {
  kDpRequest = 1,  // front -> leader: encode_request
  kDpCancel = 2,   // front -> leader: encode_id
  kDpEvents = 3,   // leader -> front: encode_events
  kDpStats = 4,    // leader -> front: encode_stats (also the leader's heartbeat)
  kDpStop = 5,     // front -> leader: empty; the leader aborts what is left and answers kDpBye
  kDpBye = 6,      // leader -> front: empty; the last message of a leader
};

// A request as the replica receives it: `req` without its grammar, which comes as `grammar`
// (empty when unconstrained: the encoded Bnf and options, also the key of the replica's cache of
// compiled grammars) for make_grammar.
struct WireRequest {
  RequestId id = 0;
  GenerateRequest req;
  std::vector<uint8_t> grammar;
};
std::vector<uint8_t> encode_request(RequestId id, const GenerateRequest& r);
WireRequest decode_request(std::span<const uint8_t> bytes);
// The grammar of WireRequest::grammar (not empty) over `vocab`.
std::shared_ptr<grammar::CompiledGrammar> make_grammar(
    std::span<const uint8_t> grammar, std::shared_ptr<const grammar::TokenVocab> vocab);
std::vector<uint8_t> encode_id(RequestId id);
RequestId decode_id(std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_events(std::span<const TokenEvent> events);
std::vector<TokenEvent> decode_events(std::span<const uint8_t> bytes);
std::vector<uint8_t> encode_stats(const EngineStats& s);
EngineStats decode_stats(std::span<const uint8_t> bytes);

// `into` plus replica `r`'s statistics: counts, pages and times summed, the last step's time
// the largest, the per-rank series appended (replica order gives world rank order).
void add_replica_stats(EngineStats& into, const EngineStats& r);

}  // namespace dss
