// Sampler throughput on one row of DeepSeek-V3's vocabulary (129280 f32 logits, N(0, 3^2)).
// Reports rows/s and the logits bandwidth (bytes of the row read per second); the row is read
// from cache after the first iteration, so the figure is a compute bound, not DRAM bandwidth.
// The Masked* cases add a structured-output mask (applied before everything else): a free-text
// position (all tokens allowed but a few words' worth), half the vocabulary, and 130 tokens (an
// enum or a digit position).
#include <benchmark/benchmark.h>

#include <vector>

#include "base/rng.h"
#include "sample/sampler.h"

namespace dss {
namespace {

constexpr int32_t kVocab = 129280;

std::vector<float> make_logits() {
  Rng rng(1);
  std::vector<float> l(kVocab);
  for (float& x : l) x = 3.0f * rng.normal();
  return l;
}

void run(benchmark::State& bs, const SamplingParams& p, int n_history,
         const std::vector<uint64_t>& mask = {}) {
  const std::vector<float> logits = make_logits();
  Sampler sampler(kVocab);
  std::vector<TokenId> prompt;
  for (int i = 0; i < n_history; ++i) prompt.push_back((i * 7919) % kVocab);
  SamplerState st(p, prompt, 0, 0);
  for (int i = 0; i < n_history; ++i) st.append((i * 104729) % kVocab);
  for (auto _ : bs) benchmark::DoNotOptimize(sampler.sample(logits, p, 1, st, mask).token);
  bs.SetItemsProcessed(bs.iterations());
  bs.SetBytesProcessed(bs.iterations() * int64_t{kVocab} * 4);
}

void BM_Greedy(benchmark::State& bs) {
  SamplingParams p;
  p.temperature = 0.0f;
  run(bs, p, 0);
}
void BM_Temperature(benchmark::State& bs) {
  SamplingParams p;
  p.temperature = 0.7f;
  run(bs, p, 0);
}
void BM_TopK50(benchmark::State& bs) {
  SamplingParams p;
  p.top_k = 50;
  run(bs, p, 0);
}
void BM_TopP09(benchmark::State& bs) {
  SamplingParams p;
  p.top_p = 0.9f;
  run(bs, p, 0);
}
void BM_TopKTopPMinP(benchmark::State& bs) {
  SamplingParams p;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  run(bs, p, 0);
}
void BM_PenaltiesLogprobs5(benchmark::State& bs) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.2f;
  p.presence_penalty = 0.2f;
  p.logprobs = 5;
  run(bs, p, 2000);
}

// kind 0: all allowed but every 100th word; 1: random half; 2: every 997th token.
std::vector<uint64_t> make_mask(int kind) {
  std::vector<uint64_t> m((kVocab + 63) / 64, kind == 2 ? 0 : ~uint64_t{0});
  Rng rng(2);
  for (size_t w = 0; w < m.size(); ++w) {
    if (kind == 0 && w % 100 == 0) m[w] = rng.next_u64();
    if (kind == 1) m[w] = rng.next_u64();
  }
  if (kind == 2)
    for (int32_t t = 0; t < kVocab; t += 997)
      m[static_cast<size_t>(t) / 64] |= uint64_t{1} << (t % 64);
  return m;
}
void BM_MaskedGreedy(benchmark::State& bs) {
  SamplingParams p;
  p.temperature = 0.0f;
  run(bs, p, 0, make_mask(static_cast<int>(bs.range(0))));
}
void BM_MaskedTopP09(benchmark::State& bs) {
  SamplingParams p;
  p.top_p = 0.9f;
  run(bs, p, 0, make_mask(static_cast<int>(bs.range(0))));
}

BENCHMARK(BM_Greedy);
BENCHMARK(BM_MaskedGreedy)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(BM_MaskedTopP09)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK(BM_Temperature);
BENCHMARK(BM_TopK50);
BENCHMARK(BM_TopP09);
BENCHMARK(BM_TopKTopPMinP);
BENCHMARK(BM_PenaltiesLogprobs5);

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
