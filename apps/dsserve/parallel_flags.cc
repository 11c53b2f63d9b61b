#include "apps/dsserve/parallel_flags.h"

#include <cstdlib>
#include <string>

namespace dss::app {

void add_parallel_flags(CLI::App* cmd, ParallelArgs& a) {
  cmd->add_option("--tp-size", a.tp_size,
                  "Tensor-parallel ranks (launch with mpirun -np N): MLA heads, dense FFN and "
                  "shared-expert rows, vocabulary split across them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--ep-size,--expert-parallel-size", a.ep_size,
                  "Expert-parallel ranks: 1 (every expert's rows split over --tp-size) or equal "
                  "to --tp-size (the routed experts partitioned)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--dp-size", a.dp_size,
                  "Data-parallel replicas (serve, generate): --tp-size x --dp-size ranks in all")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag(
      "--enable-dp-attention", a.enable_dp_attention,
      "DP attention: --dp-size attention groups of one rank each (--dp-size == --tp-size == "
      "--ep-size), each with its own requests and KV cache; the MoE layers exchange tokens");
  cmd->add_option("--dist-timeout", a.dist_timeout_s,
                  "Seconds a step of a parallel job may stall (a rank gone or hung) before every "
                  "rank exits; 0: auto (60 s for the first step, then max(5 s, 2 x the longest))")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

Result<ParallelRun> start_parallel(const ParallelArgs& a, bool allow_replicas,
                                   MpiThreadLevel level) {
  if (a.ep_size != 1 && a.ep_size != a.tp_size) {
    return Status::error("--ep-size ", a.ep_size, ": must be 1 or equal to --tp-size (", a.tp_size,
                         ")");
  }
  if (a.enable_dp_attention) {
    if (a.tp_size < 2 || a.dp_size != a.tp_size) {
      return Status::error(
          "--enable-dp-attention: --dp-size (", a.dp_size, ") must equal --tp-size (", a.tp_size,
          "), at least 2: one rank per attention group (tensor parallelism inside a group is "
          "not supported yet)");
    }
    if (a.ep_size != a.tp_size) {
      return Status::error("--enable-dp-attention: the routed experts are partitioned over the ",
                           a.tp_size, " ranks: give --ep-size ", a.tp_size);
    }
  }
  if (a.dp_size != 1 && !allow_replicas && !a.enable_dp_attention)
    return Status::error(
        "--dp-size ", a.dp_size,
        ": data-parallel replicas run in `serve` and `generate` only (use --tp-size)");
  const int32_t world = a.enable_dp_attention ? a.tp_size : a.tp_size * a.dp_size;
  // OpenMPI's mpirun sets this in every rank's environment.
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launched != nullptr && std::atoi(launched) != world) {
    return Status::error("mpirun started ", launched, " ranks but --tp-size ", a.tp_size,
                         a.enable_dp_attention ? " with DP attention" : " x --dp-size ",
                         a.enable_dp_attention ? "" : std::to_string(a.dp_size), " needs ", world);
  }
  ParallelRun run;
  if (world == 1) return run;
  if (launched == nullptr) {
    return Status::error("--tp-size ", a.tp_size, ": start with mpirun -np ", world,
                         " (one process per rank)");
  }
  DSS_ASSIGN_OR_RETURN(run.runtime, MpiRuntime::start(nullptr, nullptr, level));
  DSS_ASSIGN_OR_RETURN(MpiComm w, run.runtime->world(world));
  run.world.emplace(std::move(w));
  run.dp_size = a.dp_size;
  const int wr = run.world->rank();
  if (a.enable_dp_attention) {  // every rank its own attention group and leader
    run.dp_attention = true;
    run.leaders.emplace(run.world->split(0, wr));
    return run;
  }
  if (a.tp_size > 1) run.tp.emplace(run.world->split(wr / a.tp_size, wr));
  if (a.dp_size > 1) {  // every rank joins the split; only the leaders keep theirs
    MpiComm l = run.world->split(wr % a.tp_size == 0 ? 0 : 1, wr);
    if (wr % a.tp_size == 0) run.leaders.emplace(std::move(l));
  }
  return run;
}

}  // namespace dss::app
