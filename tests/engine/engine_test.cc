// Engine end to end (in process) on the official-format tiny-v3 golden checkpoint:
//   - 32 greedy requests of random lengths with staggered arrivals, batched together, give the
//     same tokens as each request run alone through SequenceRunner (and the golden prompts give
//     DeepSeek's reference greedy continuations);
//   - a repeated prompt hits the prefix cache, prefills only its new tokens and gives the same
//     output as the cold run;
//   - cancellation mid-prefill and mid-decode, preemption under a tiny pool and over-long prompts
//     leave every page accounted for (pages not free == pages held by the prefix cache) and the
//     integrity checks pass.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/rng.h"
#include "engine/event_collector.h"
#include "io/json.h"
#include "kernels/cpu/cpu_features.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

const std::string kModel = std::string(DSS_TEST_DATA) + "/golden/tiny-v3";

EngineOptions opts(int32_t page = 16, int32_t max_total_tokens = 0) {
  EngineOptions o;
  o.model_dir = kModel;
  o.page_size = page;
  o.max_total_tokens = max_total_tokens;
  o.max_running_requests = 16;
  o.chunked_prefill_size = 64;
  o.context_length = 512;
  o.debug_integrity = true;
  o.kv_cache_memory_bytes = 64 << 20;
  o.kv_cache_dtype = "f32";  // compared with f32 single-sequence runs
  return o;
}

GenerateRequest greedy(std::vector<TokenId> prompt, int32_t max_tokens) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.params.temperature = 0.0f;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

std::vector<TokenId> alone(const Model& m, const std::vector<TokenId>& prompt, int32_t n) {
  SequenceRunner r(m, static_cast<int32_t>(prompt.size()) + n, 64, 512);
  std::vector<TokenId> out;
  const int32_t V = m.config().n_vocab;
  auto argmax = [&](const float* lg) {
    return static_cast<TokenId>(std::max_element(lg, lg + V) - lg);
  };
  r.prefill(prompt, false, [&](int32_t, int32_t, const float* lg) { out.push_back(argmax(lg)); });
  while (static_cast<int32_t>(out.size()) < n) out.push_back(argmax(r.decode(out.back())));
  return out;
}

struct Submitted {
  RequestId id;
  std::vector<TokenId> prompt;
  int32_t n;
};

// `count` greedy requests submitted at once to e, with random prompts of prompt_min + [0,
// prompt_span) tokens and n_min + [0, n_span) new tokens, appended to subs.
void submit_random(Engine& e, Rng& rng, EventCollector& col, int count, int32_t prompt_min,
                   int32_t prompt_span, int32_t n_min, int32_t n_span,
                   std::vector<Submitted>& subs) {
  for (int i = 0; i < count; ++i) {
    std::vector<TokenId> prompt(static_cast<size_t>(prompt_min) + rng.next_u64() % prompt_span);
    for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
    const int32_t n = n_min + static_cast<int32_t>(rng.next_u64() % n_span);
    auto id = e.submit(greedy(prompt, n), col.sink());
    ASSERT_TRUE(id.is_ok()) << id.message();
    subs.push_back({*id, std::move(prompt), n});
  }
}

void expect_pages_accounted(Engine& e) {
  e.check_integrity();
  const EngineStats s = e.stats();
  EXPECT_EQ(s.n_running, 0);
  EXPECT_EQ(s.n_waiting, 0);
  EXPECT_EQ(s.kv_pages_used, s.kv_pages_cached)
      << "pages held outside the prefix cache after all requests ended";
}

// 32 greedy requests of random prompt lengths [1, 150] and [1, n_span] new tokens, four at a time
// with pauses between (staggered arrivals), each compared with the same request run alone.
// Returns the engine's stats after all ended.
EngineStats batched_greedy_equals_alone(const EngineOptions& o, int32_t n_span) {
  auto m = Model::load(LoadOptions{kModel});
  EXPECT_TRUE(m.is_ok());
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.message();
  if (!m.is_ok() || !e.is_ok()) return {};
  Rng rng(17);
  EventCollector col;
  std::vector<Submitted> subs;
  for (int i = 0; i < 32; ++i) {
    std::vector<TokenId> prompt(1 + rng.next_u64() % 150);
    for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
    const int32_t n = 1 + static_cast<int32_t>(rng.next_u64() % n_span);
    auto id = (*e)->submit(greedy(prompt, n), col.sink());
    EXPECT_TRUE(id.is_ok()) << id.message();
    subs.push_back({*id, prompt, n});
    if (i % 4 == 3)
      std::this_thread::sleep_for(std::chrono::milliseconds(3));  // staggered arrivals
  }
  col.wait_done(32);
  for (const Submitted& s : subs) {
    const auto out = col.get(s.id);
    EXPECT_EQ(out.last.finish, FinishReason::kLength);
    EXPECT_EQ(out.tokens, alone(**m, s.prompt, s.n)) << "request " << s.id;
    EXPECT_EQ(out.last.n_generated, s.n);
    EXPECT_EQ(out.last.n_prompt, static_cast<int32_t>(s.prompt.size()));
  }
  expect_pages_accounted(**e);
  return (*e)->stats();
}

TEST(Engine, BatchedGreedyEqualsEachRequestAlone) { batched_greedy_equals_alone(opts(), 24); }

// Speculative decoding with prompt-lookup drafts (the tiny random model's greedy output repeats
// itself, so drafts are accepted often): the same tokens as without it, for K = 1, 2, 3.
TEST(Engine, NgramSpeculativeGreedyEqualsEachRequestAlone) {
  for (int32_t k = 1; k <= 3; ++k) {
    EngineOptions o = opts();
    o.speculative.algorithm = SpecAlgorithm::kNgram;
    o.speculative.num_steps = k;
    const EngineStats s = batched_greedy_equals_alone(o, 64);
    EXPECT_GT(s.spec.drafts, 0) << "K=" << k;
    EXPECT_GT(s.spec.accepted_tokens, 0) << "K=" << k << ": no draft was accepted";
    EXPECT_LE(s.spec.accepted_tokens, s.spec.draft_tokens);
    EXPECT_EQ(static_cast<int32_t>(s.spec.accepted_per_pos.size()), k);
  }
}

// Sampling (temperature, top-p, penalties, a seed per request): the tokens and logprobs are those
// of decoding one token per step, because every emitted token is one sample of the same
// distribution with the same random stream (docs/speculative.md).
TEST(Engine, NgramSpeculativeSampledEqualsPlainPerSeed) {
  std::vector<std::vector<TokenId>> outs[2];
  std::vector<std::vector<float>> logprobs[2];
  for (int spec = 0; spec < 2; ++spec) {
    EngineOptions o = opts();
    if (spec) {
      o.speculative.algorithm = SpecAlgorithm::kNgram;
      o.speculative.num_steps = 3;
    }
    auto e = Engine::create(o);
    ASSERT_TRUE(e.is_ok()) << e.message();
    Rng rng(5);
    EventCollector col;
    std::vector<RequestId> ids;
    for (int i = 0; i < 12; ++i) {
      GenerateRequest r;
      r.prompt.resize(8 + rng.next_u64() % 40);
      for (auto& t : r.prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
      r.params.temperature = i % 3 == 0 ? 0.3f : 0.8f;
      r.params.top_p = i % 2 == 0 ? 0.9f : 1.0f;
      r.params.repetition_penalty = i % 4 == 1 ? 1.1f : 1.0f;
      r.params.seed = 1000 + i;
      r.params.max_tokens = 40;
      r.params.ignore_eos = true;
      r.params.logprobs = 2;
      auto id = (*e)->submit(std::move(r), col.sink());
      ASSERT_TRUE(id.is_ok()) << id.message();
      ids.push_back(*id);
    }
    col.wait_done(12);
    for (RequestId id : ids) {
      const auto out = col.get(id);
      outs[spec].push_back(out.tokens);
      std::vector<float> lp;
      for (const TokenEvent& ev : out.events) {
        if (ev.has_token) lp.push_back(ev.logprob);
      }
      logprobs[spec].push_back(lp);
    }
    if (spec) {
      EXPECT_GT((*e)->stats().spec.accepted_tokens, 0);
    }
    expect_pages_accounted(**e);
  }
  for (size_t i = 0; i < outs[0].size(); ++i) {
    EXPECT_EQ(outs[1][i], outs[0][i]) << "request " << i;
    ASSERT_EQ(logprobs[1][i].size(), logprobs[0][i].size());
    for (size_t t = 0; t < logprobs[0][i].size(); ++t)
      EXPECT_NEAR(logprobs[1][i][t], logprobs[0][i][t], 1e-4) << "request " << i << " token " << t;
  }
}

// DeepSeek's reference greedy continuations, with and without prompt-lookup drafting.
TEST(Engine, GoldenPromptsGiveReferenceGreedyContinuations) {
  for (const SpecAlgorithm spec : {SpecAlgorithm::kNone, SpecAlgorithm::kNgram}) {
    EngineOptions o = opts(64);
    o.speculative.algorithm = spec;
    o.speculative.num_steps = 3;
    auto e = Engine::create(o);
    ASSERT_TRUE(e.is_ok());
    auto j = load_json_file(kModel + "/golden.json");
    ASSERT_TRUE(j.is_ok());
    EventCollector col;
    std::vector<std::pair<RequestId, std::vector<TokenId>>> want;
    for (const Json& c : (*j)["cases"]) {
      auto id = (*e)->submit(greedy(c["prompt"].get<std::vector<TokenId>>(), 8), col.sink());
      ASSERT_TRUE(id.is_ok());
      want.emplace_back(*id, c["greedy"]["tokens"].get<std::vector<TokenId>>());
    }
    col.wait_done(static_cast<int>(want.size()));
    for (const auto& [id, tokens] : want) EXPECT_EQ(col.get(id).tokens, tokens);
    expect_pages_accounted(**e);
  }
}

TEST(Engine, PrefixCacheHitComputesOnlyNewTokens) {
  auto e = Engine::create(opts(16));
  ASSERT_TRUE(e.is_ok());
  Rng rng(3);
  std::vector<TokenId> prompt(100);
  for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
  EventCollector col;
  auto cold = (*e)->submit(greedy(prompt, 6), col.sink());
  col.wait_done(1);
  const int64_t computed_after_cold = (*e)->stats().prompt_tokens_computed;
  auto warm = (*e)->submit(greedy(prompt, 6), col.sink());
  col.wait_done(2);
  EXPECT_EQ(col.get(*warm).tokens, col.get(*cold).tokens);
  // Cold: 100 prompt + 6 generated -> 105 computed tokens -> 6 full pages of 16 cached (96 tokens).
  EXPECT_EQ(col.get(*warm).last.n_cached_prompt, 96);
  EXPECT_EQ(col.get(*cold).last.n_cached_prompt, 0);
  EXPECT_EQ((*e)->stats().prompt_tokens_computed - computed_after_cold, 100 - 96);
  expect_pages_accounted(**e);
}

// V3.2: the indexer key cache lives in the same slots, so a prefix hit reuses it too; with the
// f32 cache and with the default ("auto" = fp8: e4m3 latent + scales, indexer keys e4m3).
TEST(Engine, PrefixCacheHitOnV32GivesColdOutput) {
  for (const char* dtype : {"f32", "auto"}) {
    SCOPED_TRACE(dtype);
    EngineOptions o = opts(16);
    o.model_dir = std::string(DSS_TEST_DATA) + "/golden/tiny-v32";
    o.kv_cache_dtype = dtype;
    auto e = Engine::create(o);
    ASSERT_TRUE(e.is_ok()) << e.message();
    Rng rng(5);
    std::vector<TokenId> prompt(90);
    for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
    EventCollector col;
    auto cold = (*e)->submit(greedy(prompt, 8), col.sink());
    col.wait_done(1);
    auto warm = (*e)->submit(greedy(prompt, 8), col.sink());
    col.wait_done(2);
    EXPECT_GT(col.get(*warm).last.n_cached_prompt, 0);
    EXPECT_EQ(col.get(*warm).tokens, col.get(*cold).tokens);
    expect_pages_accounted(**e);
  }
}

TEST(Engine, CancelMidPrefillAndMidDecode) {
  EngineOptions o = opts(16);
  o.chunked_prefill_size = 8;  // a 300-token prompt takes ~38 steps
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok());
  EventCollector col;
  auto long_prefill = (*e)->submit(greedy(std::vector<TokenId>(300, 7), 4), col.sink());
  auto decoding = (*e)->submit(greedy(std::vector<TokenId>(5, 9), 200), col.sink());
  (*e)->cancel(*long_prefill);
  col.wait_tokens(*decoding, 3);
  (*e)->cancel(*decoding);
  col.wait_done(2);
  EXPECT_EQ(col.get(*long_prefill).last.finish, FinishReason::kAbort);
  EXPECT_TRUE(col.get(*long_prefill).tokens.empty());
  EXPECT_EQ(col.get(*decoding).last.finish, FinishReason::kAbort);
  EXPECT_LT(col.get(*decoding).tokens.size(), 200u);
  expect_pages_accounted(**e);
}

TEST(Engine, PreemptionUnderATinyPoolStillCompletesEveryRequest) {
  // 12 pages x 16 tokens = 192 tokens of KV for 8 requests that each need up to ~90.
  auto m = Model::load(LoadOptions{kModel});
  ASSERT_TRUE(m.is_ok());
  EngineOptions o = opts(16, 192);
  o.context_length = 192;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  Rng rng(99);
  EventCollector col;
  std::vector<Submitted> subs;
  ASSERT_NO_FATAL_FAILURE(submit_random(**e, rng, col, 8, 20, 50, 10, 30, subs));
  col.wait_done(8);
  for (const auto& [id, prompt, n] : subs)
    EXPECT_EQ(col.get(id).tokens, alone(**m, prompt, n)) << id;
  EXPECT_GT((*e)->stats().preemptions, 0);
  expect_pages_accounted(**e);
}

// The dynamic batch cap through the engine. An unreachable TPOT target (1 microsecond): the cap
// starts at 1 (slow start) and never rises, so requests run one at a time; a target no step can
// miss (1000 s): the cap doubles while requests wait. Either way every request gives exactly its
// alone-run output (cap changes only gate admission) and every page is released.
TEST(Engine, DynamicBatchCapGatesAdmissionWithoutChangingOutputs) {
  auto m = Model::load(LoadOptions{kModel});
  ASSERT_TRUE(m.is_ok());
  for (const double target_ms : {0.001, 1e6}) {
    EngineOptions o = opts();
    o.slo_tpot_ms = target_ms;
    auto e = Engine::create(o);
    ASSERT_TRUE(e.is_ok()) << e.message();
    EXPECT_EQ((*e)->stats().batch_cap, 1);  // slow start: from the first step
    Rng rng(5);
    EventCollector col;
    std::vector<std::tuple<RequestId, std::vector<TokenId>, int32_t>> subs;
    for (int i = 0; i < 12; ++i) {
      std::vector<TokenId> prompt(4 + rng.next_u64() % 40);
      for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % 2048);
      const int32_t n = 30 + static_cast<int32_t>(rng.next_u64() % 10);
      auto id = (*e)->submit(greedy(prompt, n), col.sink());
      ASSERT_TRUE(id.is_ok());
      subs.emplace_back(*id, prompt, n);
    }
    col.wait_done(12);
    for (const auto& [id, prompt, n] : subs)
      EXPECT_EQ(col.get(id).tokens, alone(**m, prompt, n)) << id;
    const EngineStats st = (*e)->stats();
    if (target_ms < 1.0) {
      EXPECT_EQ(st.batch_cap, 1);
      EXPECT_EQ(st.batch_cap_raises, 0);
    } else {
      EXPECT_GE(st.batch_cap, 8);  // 1 -> 2 -> 4 -> 8 (-> 16 while 4 of 12 still wait)
      EXPECT_GE(st.batch_cap_raises, 3);
      EXPECT_EQ(st.batch_cap_lowers, 0);
    }
    expect_pages_accounted(**e);
  }
  // Off by default: the cap is the configured maximum.
  auto e2 = Engine::create(opts());
  ASSERT_TRUE(e2.is_ok());
  EXPECT_EQ((*e2)->stats().batch_cap, 16);
}

// The default bf16 KV cache: batched greedy equals each request run alone with a bf16 cache too,
// and the pool holds twice the pages of f32 in the same memory.
TEST(Engine, Bf16KvCacheBatchedEqualsAlone) {
  auto m = Model::load(LoadOptions{kModel});
  ASSERT_TRUE(m.is_ok());
  EngineOptions o = opts();
  o.kv_cache_dtype = "bf16";
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  auto e32 = Engine::create(opts());
  ASSERT_TRUE(e32.is_ok());
  // Same memory, half the bytes per page: floor(M / (b/2)) is 2 * floor(M / b) or one more.
  EXPECT_GE((*e)->stats().kv_pages_total, 2 * (*e32)->stats().kv_pages_total);
  EXPECT_LE((*e)->stats().kv_pages_total, 2 * (*e32)->stats().kv_pages_total + 1);
  Rng rng(23);
  EventCollector col;
  std::vector<Submitted> subs;
  ASSERT_NO_FATAL_FAILURE(submit_random(**e, rng, col, 8, 1, 100, 1, 12, subs));
  col.wait_done(8);
  for (const auto& [id, prompt, n] : subs) {
    SequenceRunner r(**m, static_cast<int32_t>(prompt.size()) + n, 64, 512, DType::kBF16);
    std::vector<TokenId> want;
    const int32_t V = (*m)->config().n_vocab;
    auto argmax = [&](const float* lg) {
      return static_cast<TokenId>(std::max_element(lg, lg + V) - lg);
    };
    r.prefill(prompt, false,
              [&](int32_t, int32_t, const float* lg) { want.push_back(argmax(lg)); });
    while (static_cast<int32_t>(want.size()) < n) want.push_back(argmax(r.decode(want.back())));
    EXPECT_EQ(col.get(id).tokens, want) << id;
  }
  expect_pages_accounted(**e);
}

// --matmul-dtype bf16 (MatmulArith::kBf16Dot; CPUs with AVX512-BF16): its arithmetic is the same
// for any batch, chunk and thread split too, so batched greedy (chunked prefill of 64, up to 16
// running) equals each request run alone in one chunk.
TEST(Engine, Bf16MatmulBatchedEqualsAlone) {
  if (!cpu::cpu_has_bf16_dot()) GTEST_SKIP() << "no AVX512-BF16";
  LoadOptions lo{kModel};
  lo.matmul_dtype = MatmulDType::kBf16;
  auto m = Model::load(lo);
  ASSERT_TRUE(m.is_ok()) << m.message();
  EngineOptions o = opts();
  o.matmul_dtype = MatmulDType::kBf16;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  Rng rng(29);
  EventCollector col;
  std::vector<Submitted> subs;
  ASSERT_NO_FATAL_FAILURE(submit_random(**e, rng, col, 16, 1, 150, 1, 16, subs));
  col.wait_done(16);
  for (const auto& [id, prompt, n] : subs)
    EXPECT_EQ(col.get(id).tokens, alone(**m, prompt, n)) << id;
  expect_pages_accounted(**e);
}

TEST(Engine, RejectsBadRequestsClearly) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok());
  EventCollector col;
  auto too_long = (*e)->submit(greedy(std::vector<TokenId>(510, 1), 5), col.sink());
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_NE(too_long.message().find("maximum context length is 512"), std::string::npos)
      << too_long.message();
  auto bad_id = (*e)->submit(greedy({1, 5000}, 5), col.sink());
  ASSERT_FALSE(bad_id.is_ok());
  EXPECT_NE(bad_id.message().find("5000"), std::string::npos);
  GenerateRequest r = greedy({1, 2}, 5);
  r.params.top_p = 0.0f;
  auto bad_p = (*e)->submit(r, col.sink());
  ASSERT_FALSE(bad_p.is_ok());
  EXPECT_NE(bad_p.message().find("top_p"), std::string::npos);
  EXPECT_FALSE((*e)->submit(greedy({}, 5), col.sink()).is_ok());
  expect_pages_accounted(**e);
}

TEST(Engine, SeededSamplingIsReproducibleAcrossBatches) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok());
  EventCollector col;
  GenerateRequest r = greedy({5, 6, 7, 8}, 12);
  r.params.temperature = 0.9f;
  r.params.top_p = 0.9f;
  r.params.seed = 1234;
  auto a = (*e)->submit(r, col.sink());
  auto noise = (*e)->submit(greedy({9, 9, 9}, 20), col.sink());
  auto b = (*e)->submit(r, col.sink());
  col.wait_done(3);
  (void)noise;
  EXPECT_EQ(col.get(*a).tokens, col.get(*b).tokens);
  EXPECT_EQ(col.get(*a).tokens.size(), 12u);
}

TEST(Engine, ShutdownAbortsWhatIsLeft) {
  auto e = Engine::create(opts());
  ASSERT_TRUE(e.is_ok());
  EventCollector col;
  auto id = (*e)->submit(greedy(std::vector<TokenId>(100, 3), 400), col.sink());
  col.wait_tokens(*id, 2);
  (*e)->shutdown();
  EXPECT_EQ(col.get(*id).last.finish, FinishReason::kAbort);
  EXPECT_FALSE((*e)->submit(greedy({1}, 1), col.sink()).is_ok());
}

}  // namespace
}  // namespace dss

namespace dss {
namespace {

namespace fs = std::filesystem;

// A copy of tiny-v3 whose embedding row `token` is NaN (BF16 0x7FC0 in every element): any
// sequence containing that token gets NaN hidden states from there on, hence NaN logits.
std::string poisoned_copy(TokenId token) {
  const fs::path dir = fs::temp_directory_path() / ("dss_nan_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kModel, dir, fs::copy_options::recursive);
  const Json index = *load_json_file((dir / "model.safetensors.index.json").string());
  const std::string name = "model.embed_tokens.weight";
  const fs::path shard = dir / index["weight_map"][name].get<std::string>();
  std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t header_len = 0;
  f.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  f.read(header.data(), static_cast<std::streamsize>(header_len));
  const Json h = Json::parse(header);
  EXPECT_EQ(h[name]["dtype"], "BF16");
  const int64_t d_model = h[name]["shape"][1].get<int64_t>();
  const int64_t begin = h[name]["data_offsets"][0].get<int64_t>();
  const std::vector<uint16_t> nan_row(static_cast<size_t>(d_model), 0x7FC0);
  f.seekp(static_cast<std::streamoff>(8 + header_len + begin + token * d_model * 2));
  f.write(reinterpret_cast<const char*>(nan_row.data()), d_model * 2);
  return dir.string();
}

// Non-finite logits fail their own request (an error event, pages released, its prompt not
// cached) while requests beside it in the same batch complete with the tokens they get alone.
TEST(Engine, NonFiniteLogitsFailOnlyTheirRequest) {
  const TokenId kPoison = 77;
  EngineOptions o = opts(16);
  o.model_dir = poisoned_copy(kPoison);
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  EventCollector col;
  std::vector<TokenId> bad_prompt(40, 5), good_prompt(40, 5);
  bad_prompt[30] = kPoison;
  good_prompt[0] = 6;  // shares no page with bad_prompt (a shared valid prefix could be cached)
  good_prompt[30] = 78;
  auto bad = (*e)->submit(greedy(bad_prompt, 8), col.sink());
  auto good = (*e)->submit(greedy(good_prompt, 8), col.sink());
  ASSERT_TRUE(bad.is_ok() && good.is_ok());
  col.wait_done(2);
  const auto b = col.get(*bad);
  EXPECT_EQ(b.last.finish, FinishReason::kError);
  EXPECT_EQ(b.last.error_kind, RequestError::kNonFiniteLogits);
  EXPECT_NE(b.last.error.find("non-finite"), std::string::npos) << b.last.error;
  EXPECT_TRUE(b.tokens.empty());
  const auto g = col.get(*good);
  EXPECT_EQ(g.last.finish, FinishReason::kLength);
  EXPECT_TRUE(g.last.error.empty());
  auto m = Model::load(LoadOptions{kModel});
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(g.tokens, alone(**m, good_prompt, 8));
  // The poisoned prompt was not offered to the prefix cache: the same prompt again computes all
  // of it (and fails the same way), and the engine keeps serving.
  auto again = (*e)->submit(greedy(bad_prompt, 8), col.sink());
  col.wait_done(3);
  EXPECT_EQ(col.get(*again).last.n_cached_prompt, 0);
  EXPECT_EQ(col.get(*again).last.error_kind, RequestError::kNonFiniteLogits);
  expect_pages_accounted(**e);
  e->reset();
  fs::remove_all(o.model_dir);
}

// --request-timeout ends a running request with a timeout error; --max-queue-time ends one that
// waits behind a full batch (max_running_requests 1). Both release their pages. The running
// request asks for 500 tokens, which tiny-v3 cannot produce within 0.05 s on any host we use.
TEST(Engine, DeadlinesEndRequestsWithAnError) {
  EngineOptions o = opts(16);
  o.request_timeout_s = 0.05;
  o.max_queue_time_s = 0.01;
  o.max_running_requests = 1;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  EventCollector col;
  auto running = (*e)->submit(greedy(std::vector<TokenId>(8, 9), 500), col.sink());
  auto queued = (*e)->submit(greedy(std::vector<TokenId>(8, 3), 4), col.sink());
  ASSERT_TRUE(running.is_ok() && queued.is_ok());
  col.wait_done(2);
  const auto q = col.get(*queued);
  EXPECT_EQ(q.last.finish, FinishReason::kError);
  EXPECT_EQ(q.last.error_kind, RequestError::kQueueTimeout);
  EXPECT_NE(q.last.error.find("--max-queue-time"), std::string::npos) << q.last.error;
  EXPECT_TRUE(q.tokens.empty());
  const auto r = col.get(*running);
  EXPECT_EQ(r.last.finish, FinishReason::kError);
  EXPECT_EQ(r.last.error_kind, RequestError::kTimeout);
  EXPECT_NE(r.last.error.find("--request-timeout"), std::string::npos) << r.last.error;
  EXPECT_LT(r.tokens.size(), 500u);
  expect_pages_accounted(**e);
}

}  // namespace
}  // namespace dss
