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

std::vector<std::vector<float>> probe_mtp_logits(const Model& m, std::span<const TokenId> ids) {
  const int32_t V = m.config().n_vocab;
  const int64_t d = m.config().d_model;
  const auto n = static_cast<int32_t>(ids.size());
  DSS_CHECK(m.has_mtp() && n >= 2);
  constexpr int32_t kPage = 64;
  const int32_t n_pages = (n + kPage - 1) / kPage;
  KvCache kv = m.make_kv_cache(m.kv_layout(kPage), n_pages);
  WorkspaceLimits lim{n, n, n, m.n_threads(), m.act_quant_fp8()};
  lim.mtp = true;
  Workspace ws = m.workspace(lim);
  std::vector<int32_t> positions(static_cast<size_t>(n)), rows;
  std::vector<PageId> pages(static_cast<size_t>(n_pages));
  for (int32_t i = 0; i < n_pages; ++i) pages[static_cast<size_t>(i)] = i;
  for (int32_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = i;
  // Positions [0, len): one sequence, slots = positions (pages in order).
  auto batch = [&](std::span<const TokenId> tokens, int32_t len, const int32_t* begin_end,
                   const int32_t* kv_len) {
    ForwardBatch b;
    b.tokens = tokens.first(static_cast<size_t>(len));
    b.positions = std::span<const int32_t>(positions).first(static_cast<size_t>(len));
    b.seq_token_begin = std::span<const int32_t>(begin_end, 2);
    b.seq_kv_len = std::span<const int32_t>(kv_len, 1);
    b.page_table = pages;
    b.max_pages = n_pages;
    b.kv_write_slots = b.positions;
    b.logit_rows = rows;
    return b;
  };
  const int32_t main_span[2] = {0, n}, main_len[1] = {n};
  std::vector<float> last(static_cast<size_t>(V));
  rows = {n - 1};
  m.forward(batch(ids, n, main_span, main_len), kv, ws, last.data());
  const std::vector<float> hidden(ws.hidden.begin(), ws.hidden.begin() + (n - 1) * d);
  const int32_t mtp_span[2] = {0, n - 1}, mtp_len[1] = {n - 1};
  rows.clear();
  for (int32_t i = 0; i < n - 1; ++i) rows.push_back(i);
  std::vector<float> logits(static_cast<size_t>(n - 1) * V);
  m.mtp_forward(batch(ids.subspan(1), n - 1, mtp_span, mtp_len), hidden, kv, ws, logits.data(), {});
  std::vector<std::vector<float>> out;
  for (int32_t i = 0; i < n - 1; ++i)
    out.emplace_back(logits.begin() + i * V, logits.begin() + (i + 1) * V);
  return out;
}

}  // namespace dss
