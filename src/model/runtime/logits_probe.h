// One prompt through a loaded model, as `dsserve logits` reports it (the CLI's check against
// DeepSeek's reference logits): a chunked prefill with logits for every position, then `decode`
// greedy tokens (the first from the prefill's last row, then decode steps).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/runtime/model.h"

namespace dss {

struct LogitsProbe {
  std::vector<int32_t> argmax;      // [n] the argmax of each prompt position's logits
  std::vector<float> argmax_logit;  // [n] its logit
  std::vector<float> last_logits;   // [n_vocab] the last prompt position's logits
  std::vector<int32_t> greedy;      // [decode] greedy tokens
  double prefill_s = 0.0, total_s = 0.0;
};

// ids: token ids < n_vocab, with ids.size() + decode <= max_position_embeddings (CHECKed: the
// caller validates). chunk: prefill tokens per forward.
LogitsProbe probe_logits(const Model& m, std::span<const TokenId> ids, int32_t decode,
                         int32_t chunk, AttnPath path);

// The MTP module's logits at positions 0 .. n-2 of `ids` (m.has_mtp(), ids.size() >= 2): one
// forward of the whole prompt keeps the final-normed hidden states h_0 .. h_{n-2}, then the
// module runs over positions 0 .. n-2 with tokens ids[1 ..] and those states. Row p
// [n_vocab] predicts token p + 2 (scripts/mtp_reference.py checks it).
std::vector<std::vector<float>> probe_mtp_logits(const Model& m, std::span<const TokenId> ids);

}  // namespace dss
