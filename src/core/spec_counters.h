// Speculative decoding's counters (vLLM's spec_decode metrics), kept by the scheduler and
// published by the engine. Plain data.
#pragma once

#include <cstdint>
#include <vector>

namespace dss {

struct SpecCounters {
  int64_t drafts = 0;           // decode steps that verified a draft
  int64_t draft_tokens = 0;     // draft tokens verified
  int64_t accepted_tokens = 0;  // of them accepted
  // accepted_per_pos[k]: drafts whose token k was accepted; accepted_count[j]: drafts of which
  // exactly j tokens were accepted (both grown on demand).
  std::vector<int64_t> accepted_per_pos;
  std::vector<int64_t> accepted_count;

  // One verified draft of n_draft tokens, the first n_accepted of them accepted.
  void count(int32_t n_draft, int32_t n_accepted) {
    drafts++;
    draft_tokens += n_draft;
    accepted_tokens += n_accepted;
    if (static_cast<int32_t>(accepted_per_pos.size()) < n_draft)
      accepted_per_pos.resize(static_cast<size_t>(n_draft));
    for (int32_t k = 0; k < n_accepted; ++k) accepted_per_pos[static_cast<size_t>(k)]++;
    if (static_cast<int32_t>(accepted_count.size()) <= n_accepted)
      accepted_count.resize(static_cast<size_t>(n_accepted) + 1);
    accepted_count[static_cast<size_t>(n_accepted)]++;
  }
};

}  // namespace dss
