// Scheduler knobs (plain data). Flag names in comments.
#pragma once

#include <cstdint>

namespace dss {

struct SchedulerConfig {
  int32_t page_size = 64;             // --page-size: tokens per KV page (any value >= 1)
  int32_t max_running_requests = 64;  // --max-running-requests
  int32_t chunked_prefill_size =
      2048;  // --chunked-prefill-size: token budget per step (decodes + prefill chunks)
  int32_t context_length = 4096;    // --context-length: prompt + max_tokens limit per request
  bool enable_prefix_cache = true;  // --disable-prefix-cache turns it off
};

}  // namespace dss
