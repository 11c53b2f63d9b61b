// Parallelism flags (SGLang's names and meanings) and the MPI start-up they imply, for every
// command that runs the model: `mpirun -np N dsserve <cmd> --tp-size T [--ep-size T]`.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

#include "base/status.h"
#include "dist/mpi_comm.h"

namespace dss::app {

struct ParallelArgs {
  int32_t tp_size = 1;  // --tp-size: ranks of the tensor-parallel group (heads, FFN rows, vocab)
  int32_t ep_size = 1;  // --ep-size / --expert-parallel-size: 1 or tp_size (experts partitioned)
  int32_t dp_size = 1;  // --dp-size: data-parallel replicas / attention groups (not yet)
  bool enable_dp_attention = false;
  double dist_timeout_s = 0.0;  // --dist-timeout: stalled-step limit (0: auto; step_watchdog.h)
};

void add_parallel_flags(CLI::App* cmd, ParallelArgs& a);

// The MPI world of a parallel run: held for the whole command (MPI_Finalize at destruction,
// after every communicator made from it). World rank w is rank w % tp_size of data-parallel
// replica w / tp_size; a replica's rank 0 is its leader (runs its engine's scheduler).
// DP attention (--enable-dp-attention, --dp-size == --tp-size): the world has tp_size ranks, each
// one attention group of its own (a replica of one rank, its own leader) whose MoE layers
// exchange tokens with the others over the world (dp_attention_group()).
struct ParallelRun {
  std::unique_ptr<MpiRuntime> runtime;
  std::optional<MpiComm> world;
  std::optional<MpiComm> tp;       // this replica's tensor-parallel group (when tp_size > 1)
  std::optional<MpiComm> leaders;  // the replicas' leaders, replica order (when dp_size > 1)
  int32_t dp_size = 1;
  bool dp_attention = false;
  int rank() const { return world ? world->rank() : 0; }  // world rank: 0 prints
  int replica() const { return world && tp ? world->rank() / tp->size() : rank(); }
  int leader_rank(int32_t replica) const { return tp ? replica * tp->size() : replica; }
  bool is_leader() const { return !tp || tp->rank() == 0; }
  MpiComm* tp_group() { return tp ? &*tp : nullptr; }
  MpiComm* dp_attention_group() { return dp_attention ? &*world : nullptr; }
  // The group Model::load splits the weights over: the tensor-parallel group, or under DP
  // attention the world (its routed experts).
  MpiComm* model_group() { return dp_attention ? &*world : tp_group(); }
};

// Checks the flags against each other and against the launch, and starts MPI when the run is
// parallel (--tp-size x --dp-size > 1, or --tp-size under DP attention). Errors name the flag:
// --ep-size other than 1 or --tp-size, --dp-size > 1 where the command has no replicas
// (allow_replicas false), --enable-dp-attention without --dp-size == --ep-size == --tp-size >= 2,
// a world from mpirun whose size is not the flags' (detected from OpenMPI's environment without
// starting MPI for a single-process run).
// `level`: the MPI thread support the command needs (kMultiple where a mailbox thread talks
// while the engine runs collectives: serve --dp-size).
Result<ParallelRun> start_parallel(const ParallelArgs& a, bool allow_replicas = false,
                                   MpiThreadLevel level = MpiThreadLevel::kSerialized);

}  // namespace dss::app
