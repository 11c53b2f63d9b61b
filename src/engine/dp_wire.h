// The messages between the data-parallel front (engine/dp_front.h) and the replica leaders
// (engine/dp_replica.h), as bytes for MpiMailbox: a request (without its grammar: the front keeps
// constrained requests on its own replica), a cancel, a batch of token events, a replica's
// statistics. Fields are copied in the host's layout: every rank runs the same binary on the same
// architecture. A message that does not decode is an invariant violation (CHECK): only ranks of
// the same job send them.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/generate.h"
#include "engine/engine.h"

namespace dss {

enum DpTag : int {
  kDpRequest = 1,  // front -> leader: encode_request
  kDpCancel = 2,   // front -> leader: encode_id
  kDpEvents = 3,   // leader -> front: encode_events
  kDpStats = 4,    // leader -> front: encode_stats (also the leader's heartbeat)
  kDpStop = 5,     // front -> leader: empty; the leader aborts what is left and answers kDpBye
  kDpBye = 6,      // leader -> front: empty; the last message of a leader
};

std::vector<uint8_t> encode_request(RequestId id, const GenerateRequest& r);
std::pair<RequestId, GenerateRequest> decode_request(std::span<const uint8_t> bytes);
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
