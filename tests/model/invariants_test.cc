// Invariants of the forward pass that catch most KV-cache and batching bugs, on the official-
// format tiny-v3 checkpoint:
//   prefill(n) then decode(1) == prefill(n+1); naive MLA == absorbed MLA at every position;
//   chunked prefill == one-shot prefill; results independent of the page size.
// Tolerance 1e-4 absolute on logits of standard deviation ~4: these paths differ only in float32
// summation order (the golden's own naive-vs-absorbed difference is 9e-6).
#include <gtest/gtest.h>

#include <vector>

#include "base/rng.h"
#include "model/runtime/model.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

constexpr float kTol = 1e-4f;

std::unique_ptr<Model> load_tiny() {
  auto m = Model::load(LoadOptions{std::string(DSS_TEST_DATA) + "/golden/tiny-v3"});
  EXPECT_TRUE(m.is_ok()) << m.message();
  return std::move(m).value();
}

std::vector<TokenId> random_prompt(int32_t n, int32_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<TokenId> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<TokenId>(rng.next_u64() % static_cast<uint64_t>(vocab));
  return ids;
}

// All-position logits [n, V] of one prefill.
std::vector<float> prefill_all(const Model& m, const std::vector<TokenId>& ids, int32_t page, int32_t chunk, AttnPath path) {
  const int32_t V = m.config().n_vocab;
  SequenceRunner r(m, static_cast<int32_t>(ids.size()), page, chunk);
  std::vector<float> out(ids.size() * static_cast<size_t>(V));
  r.prefill(ids, true, [&](int32_t first, int32_t rows, const float* lg) {
    std::copy(lg, lg + static_cast<size_t>(rows) * V, out.begin() + static_cast<ptrdiff_t>(first) * V);
  }, path);
  return out;
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

TEST(ForwardInvariants, PrefillThenDecodeEqualsLongerPrefill) {
  auto m = load_tiny();
  const int32_t V = m->config().n_vocab;
  for (int32_t n : {1, 5, 63, 64, 65, 150}) {
    SCOPED_TRACE(n);
    const auto ids = random_prompt(n + 1, V, 100 + static_cast<uint64_t>(n));
    const auto full = prefill_all(*m, ids, 64, 512, AttnPath::kAuto);
    SequenceRunner r(*m, n + 1, 64, 512);
    r.prefill(std::span<const TokenId>(ids).first(static_cast<size_t>(n)), false, nullptr);
    const float* lg = r.decode(ids.back());
    std::vector<float> dec(lg, lg + V);
    std::vector<float> want(full.end() - V, full.end());
    EXPECT_LE(max_diff(dec, want), kTol);
  }
}

TEST(ForwardInvariants, NaiveAndAbsorbedAgree) {
  auto m = load_tiny();
  const auto ids = random_prompt(97, m->config().n_vocab, 7);
  const auto naive = prefill_all(*m, ids, 64, 512, AttnPath::kNaive);
  const auto absorbed = prefill_all(*m, ids, 64, 512, AttnPath::kAbsorbed);
  EXPECT_LE(max_diff(naive, absorbed), kTol);
}

TEST(ForwardInvariants, ChunkedPrefillAndPageSizeDoNotMatter) {
  auto m = load_tiny();
  const auto ids = random_prompt(130, m->config().n_vocab, 11);
  const auto ref = prefill_all(*m, ids, 64, 512, AttnPath::kAuto);
  for (auto [page, chunk] : {std::pair{64, 7}, std::pair{1, 130}, std::pair{3, 32}, std::pair{16, 1}, std::pair{200, 50}}) {
    SCOPED_TRACE(testing::Message() << "page " << page << " chunk " << chunk);
    EXPECT_LE(max_diff(prefill_all(*m, ids, page, chunk, AttnPath::kAuto), ref), kTol);
  }
}

TEST(ForwardInvariants, DecodeIsDeterministic) {
  auto m = load_tiny();
  const auto ids = random_prompt(20, m->config().n_vocab, 3);
  std::vector<float> a, b;
  for (auto* out : {&a, &b}) {
    SequenceRunner r(*m, 30, 64, 512);
    r.prefill(ids, false, nullptr);
    const float* lg = r.decode(5);
    out->assign(lg, lg + m->config().n_vocab);
  }
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace dss
