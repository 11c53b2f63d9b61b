// EngineApi: what the HTTP routes need from an engine: the Engine itself (one replica), or the
// data-parallel front over several (engine/dp_front.h). The contracts are Engine's
// (engine/engine.h): submit() validates and queues, sinks must not block, cancel() ends a request
// with a kAbort event at the next step boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/generate.h"
#include "core/spec_counters.h"
#include "io/model_config.h"

namespace dss {

// One rank of a tensor-parallel group, as of the engine's last exchange of these (every
// kRankStatsEvery steps): its forward passes, their wall time, and the part of it and the bytes
// spent in the group's collectives.
struct RankStats {
  int64_t forwards = 0;
  double forward_seconds = 0.0;
  double collective_seconds = 0.0;
  int64_t collective_bytes = 0;
};
inline constexpr int64_t kRankStatsEvery = 16;

// One data-parallel replica as the front sees it (engine/dp_front.h).
struct ReplicaStats {
  int64_t routed = 0;  // requests the front sent there
  int32_t n_running = 0;
  int32_t n_waiting = 0;
  int32_t kv_pages_used = 0;
  int64_t generation_tokens = 0;
};

struct EngineStats {
  int32_t n_running = 0;
  int32_t n_waiting = 0;
  int32_t kv_pages_total = 0;
  int32_t kv_pages_used = 0;    // pages not free (held by requests or the prefix cache)
  int32_t kv_pages_cached = 0;  // pages held by the prefix cache
  int32_t page_size = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prompt_tokens_computed = 0;  // prefill work actually done
  int64_t generation_tokens = 0;
  int64_t preemptions = 0;
  int64_t steps = 0;
  double busy_seconds = 0.0;  // time spent in steps
  double last_step_ms = 0.0;
  int64_t requests_finished = 0;
  int32_t batch_cap = 0;         // running-batch admission limit now (dynamic batch cap)
  int64_t batch_cap_raises = 0;  // dynamic batch cap decisions (0 when off)
  int64_t batch_cap_lowers = 0;
  double batch_cap_p99_tpot_ms = 0;    // the P99 step time the last decision window saw
  int64_t grammar_masks = 0;           // structured output: allowed-token masks computed
  double grammar_mask_seconds = 0.0;   // time spent computing them (engine thread, per step)
  std::vector<RankStats> ranks;        // tensor parallel: [tp_size]; empty otherwise
  std::vector<ReplicaStats> replicas;  // the data-parallel front: [dp_size]; empty otherwise
  // Speculative decoding (num_steps 0: off): the scheduler's counters and the drafter's wall
  // time (the MTP module's forwards; NGRAM's lookups are not timed).
  int32_t spec_num_steps = 0;
  SpecCounters spec;
  double spec_draft_seconds = 0.0;
};

class EngineApi {
 public:
  virtual ~EngineApi() = default;
  virtual Result<RequestId> submit(GenerateRequest req, EventSink sink) = 0;
  virtual void cancel(RequestId id) = 0;
  virtual EngineStats stats() const = 0;
  virtual const ModelConfig& model_config() const = 0;
  virtual int32_t context_length() const = 0;
  // A parallel job: on_stall runs once when the job cannot go on (a rank gone or hung), before the
  // process exits; expect_shutdown() tells that the launcher is ending the job.
  virtual void set_on_stall(std::function<void(const std::string&)> on_stall) = 0;
  virtual void expect_shutdown() = 0;
};

}  // namespace dss
