// Sampler throughput on one row of DeepSeek-V3's vocabulary (129280 f32 logits, N(0, 3^2)).
// Reports rows/s and the logits bandwidth (bytes of the row read per second); the row is read
// from cache after the first iteration, so the figure is a compute bound, not DRAM bandwidth.
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

void run(benchmark::State& bs, const SamplingParams& p, int n_history) {
  const std::vector<float> logits = make_logits();
  Sampler sampler(kVocab);
  std::vector<TokenId> prompt;
  for (int i = 0; i < n_history; ++i) prompt.push_back((i * 7919) % kVocab);
  SamplerState st(p, prompt, 0, 0);
  for (int i = 0; i < n_history; ++i) st.append((i * 104729) % kVocab);
  for (auto _ : bs) benchmark::DoNotOptimize(sampler.sample(logits, p, 1, st).token);
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

BENCHMARK(BM_Greedy);
BENCHMARK(BM_Temperature);
BENCHMARK(BM_TopK50);
BENCHMARK(BM_TopP09);
BENCHMARK(BM_TopKTopPMinP);
BENCHMARK(BM_PenaltiesLogprobs5);

}  // namespace
}  // namespace dss

BENCHMARK_MAIN();
