// Data-parallel replicas for a batch of requests (`generate --dp-size D`): which requests each
// replica runs, and the result lines gathered to world rank 0 in input order.
// The split is a DpRouter pass (sched/dp_router.h) over the requests in input order, load =
// requests assigned so far, that every replica leader makes alike (deterministic, so no message
// is needed): prompts sharing a prefix go to the same replica while the loads stay within the
// router's imbalance limit, the rest round-robin.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dist/mpi_comm.h"
#include "server/batch_generate.h"

namespace dss::app {

// Indexes (into requests, ascending) of the requests replica `replica` of `n_replicas` runs.
std::vector<size_t> replica_share(const std::vector<BatchRequest>& requests, int32_t n_replicas,
                                  int32_t replica, int32_t page_size);

// Collective over `leaders`: every leader gives its (request index, line) pairs; leader 0 gets
// all n_total lines in index order (the others get an empty vector). CHECKs that every index
// arrives once.
std::vector<std::string> gather_lines(MpiComm& leaders,
                                      const std::vector<std::pair<size_t, std::string>>& mine,
                                      size_t n_total);

// Collective over `leaders`: the element-wise sum of every leader's `values` on leader 0.
std::vector<int64_t> sum_to_leader0(MpiComm& leaders, const std::vector<int64_t>& values);

}  // namespace dss::app
