// The leader of data-parallel replica r > 0 under `serve --dp-size D`: serves its engine to the
// front on world rank 0 (engine/dp_front.h) over the leaders' MpiMailbox. Requests arrive with the
// front's ids and go to the engine; their token events go back in batches, as they come; every
// kDpStatsEveryS the engine's statistics go too (the front's heartbeat from this replica). On the
// front's stop, the engine shuts down (aborting what is left: their kAbort events go back), a
// last kDpBye follows, and this returns.
#pragma once

#include "dist/mpi_mailbox.h"
#include "engine/engine.h"

namespace dss {

// Blocks the calling thread until the front says stop; the engine is shut down on return.
void serve_replica(Engine& engine, MpiMailbox& mail);

}  // namespace dss
