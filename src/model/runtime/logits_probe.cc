#include "model/runtime/logits_probe.h"

#include <algorithm>

#include "base/check.h"
#include "base/clock.h"
#include "model/runtime/sequence_runner.h"

namespace dss {

namespace {
int32_t argmax(const float* v, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (v[i] > v[best]) best = i;
  }
  return best;
}
}  // namespace

LogitsProbe probe_logits(const Model& m, std::span<const TokenId> ids, int32_t decode,
                         int32_t chunk, AttnPath path) {
  const int32_t V = m.config().n_vocab;
  const auto n = static_cast<int32_t>(ids.size());
  const int32_t max_len = n + std::max(decode, 0);
  DSS_CHECK(n > 0 && max_len <= m.config().max_position_embeddings, "probe of ", max_len,
            " tokens");
  LogitsProbe p;
  p.argmax.resize(static_cast<size_t>(n));
  p.argmax_logit.resize(static_cast<size_t>(n));
  p.last_logits.resize(static_cast<size_t>(V));
  SequenceRunner runner(m, max_len, 64, chunk);
  const double t0 = now_seconds();
  runner.prefill(
      ids, /*all_logits=*/true,
      [&](int32_t first, int32_t rows, const float* lg) {
        for (int32_t r = 0; r < rows; ++r) {
          const float* row = lg + static_cast<size_t>(r) * V;
          const int32_t best = argmax(row, V);
          p.argmax[static_cast<size_t>(first + r)] = best;
          p.argmax_logit[static_cast<size_t>(first + r)] = row[best];
          if (first + r == n - 1) std::copy(row, row + V, p.last_logits.begin());
        }
      },
      path);
  p.prefill_s = now_seconds() - t0;
  if (decode > 0) {
    p.greedy.push_back(p.argmax.back());
    while (static_cast<int32_t>(p.greedy.size()) < decode) {
      const float* lg = runner.decode(p.greedy.back(), path);
      p.greedy.push_back(argmax(lg, V));
    }
  }
  p.total_s = now_seconds() - t0;
  return p;
}

}  // namespace dss
