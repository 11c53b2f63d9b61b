// The leader of data-parallel replica r > 0 under `serve --dp-size D`: serves its engine to the
// front on world rank 0 (engine/dp_front.h) over the leaders' MpiMailbox. Requests arrive with the
// front's ids and go to the engine; their token events go back in batches, as they come; every
// kDpStatsEveryS the engine's statistics go too (the front's heartbeat from this replica). On the
// front's stop, the engine shuts down (aborting what is left: their kAbort events go back), a
// last kDpBye follows, and this returns. A request's output grammar arrives lowered and is bound
// to `vocab` (the same vocabulary the front compiles against); the compiled grammars are kept
// by their bytes (up to kReplicaGrammarCache), so the requests of one schema share its masks.
#pragma once

#include <memory>

#include "dist/mpi_mailbox.h"
#include "engine/engine.h"
#include "grammar/token_vocab.h"

namespace dss {

inline constexpr size_t kReplicaGrammarCache = 256;

// Blocks the calling thread until the front says stop; the engine has ended on return. Where the
// engine thread runs collectives (DP attention, a tensor-parallel replica) it polls the mailbox
// between its rounds or steps (engine.set_round_hook: one thread calls MPI); otherwise the
// calling thread polls it.
// vocab: null without a tokenizer (the front then has no grammars either).
void serve_replica(Engine& engine, MpiMailbox& mail,
                   std::shared_ptr<const grammar::TokenVocab> vocab);

}  // namespace dss
