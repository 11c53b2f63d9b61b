// Speculative decoding with DeepSeek's MTP module (--speculative-algorithm NEXTN) on tiny random
// checkpoints that carry one (init-model --mtp-layers 1), V3 and V3.2:
//   - the drafter's module rows, kept up to date step by step (chunked prefill, verified drafts
//     partly accepted, rejected positions rewritten), give the same first draft as the module
//     run once over the whole sequence (probe_mtp_logits, itself checked against
//     scripts/mtp_reference.py by cli_model_test);
//   - greedy output with MTP equals greedy output without it, token for token, for 32 concurrent
//     requests of mixed lengths, K = 1, 2, 3.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "base/rng.h"
#include "engine/engine.h"
#include "engine/event_collector.h"
#include "engine/mtp_drafter.h"
#include "io/json.h"
#include "model/deepseek/random_checkpoint.h"
#include "model/runtime/logits_probe.h"
#include "model/runtime/sequence_runner.h"
#include "sched/batch_builder.h"

namespace dss {
namespace {

constexpr int32_t kVocab = 2048;  // the golden prompts' ids fit

// A tiny checkpoint of `preset` with an MTP module, written once per test binary.
std::string mtp_model(const std::string& preset) {
  static std::map<std::string, std::string> made;
  if (auto it = made.find(preset); it != made.end()) return it->second;
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("dss-mtp-test-" + preset + "-" + std::to_string(::getpid())))
                              .string();
  Json cfg = preset_config(preset).value();
  cfg["vocab_size"] = kVocab;
  cfg["num_nextn_predict_layers"] = 1;
  RandomCheckpointOptions ro;
  ro.out_dir = dir;
  ro.seed = 3;
  EXPECT_TRUE(write_random_checkpoint(cfg, ro).is_ok());
  made[preset] = dir;
  return dir;
}

struct CleanUp : ::testing::Environment {
  void TearDown() override {
    for (const char* p : {"tiny", "tiny-v32"}) {
      std::filesystem::remove_all(
          std::filesystem::temp_directory_path() /
          (std::string("dss-mtp-test-") + p + "-" + std::to_string(::getpid())));
    }
  }
};
const auto* const kCleanUp = ::testing::AddGlobalTestEnvironment(new CleanUp);

TokenId argmax(const float* row, int32_t n) {
  return static_cast<TokenId>(std::max_element(row, row + n) - row);
}

// The engine's loop by hand (plan, forward, commit, draft) for three requests, with a step
// budget that chunks their prefills; the "sampler" takes the target's argmax but accepts every
// other draft whole (so accepted positions are exercised although random drafts are never
// right). After each step, every sequence's first draft must be the module's argmax at its
// newest position when run once over its whole token sequence.
void drafts_match_one_shot(const std::string& preset) {
  LoadOptions lo{mtp_model(preset)};
  lo.matmul_dtype = MatmulDType::kF32;
  lo.mtp = true;
  auto m = Model::load(lo);
  ASSERT_TRUE(m.is_ok()) << m.message();
  const Model& model = **m;
  constexpr int32_t kPage = 8, kBudget = 24, kSteps = 3, kContext = 256;
  KvCache kv = model.make_kv_cache(model.kv_layout(kPage), 128);
  BlockPool pool(128);
  RadixCache radix(kPage, pool);
  Scheduler sched(SchedulerConfig{kPage, 4, kBudget, kContext, false}, pool, radix);
  WorkspaceLimits lim{kBudget, kContext, 4 * (1 + kSteps), model.n_threads(), false};
  lim.mtp = true;
  Workspace ws = model.workspace(lim);
  MtpDrafter drafter(model, kv, ws, kPage, kSteps, 4, kBudget, kContext);
  BatchBuilder builder(kPage);
  Rng rng(11);
  for (RequestId id = 1; id <= 3; ++id) {
    std::vector<TokenId> prompt(5 + 13 * static_cast<size_t>(id));
    for (auto& t : prompt) t = static_cast<TokenId>(rng.next_u64() % kVocab);
    ASSERT_TRUE(sched.add(SchedRequest{id, prompt, 20}).is_ok());
  }
  const int32_t V = model.config().n_vocab;
  std::vector<float> logits(static_cast<size_t>(lim.max_logit_rows) * V);
  int32_t n_checked = 0;
  for (int step = 0; !sched.idle() && step < 200; ++step) {
    const StepPlan plan = sched.plan();
    for (const ScheduledSeq& q : plan.seqs) {  // the drafts this step verifies
      if (q.n_draft == 0) continue;
      const std::optional<SeqView> v = sched.view(q.id);
      const std::vector<TokenId> toks(v->tokens.begin(), v->tokens.end());
      const std::vector<float> ref = probe_mtp_logits(model, toks).back();
      const float best = *std::max_element(ref.begin(), ref.end());
      EXPECT_GE(ref[static_cast<size_t>(q.draft[0])], best - 1e-4f)
          << preset << " request " << q.id << " at length " << toks.size();
      ++n_checked;
    }
    const ForwardBatch& b = builder.build(plan);
    model.forward(b, kv, ws, logits.data());
    std::vector<StepResult> results;
    int32_t row = 0;
    for (const ScheduledSeq& q : plan.seqs) {
      if (!q.needs_logits) continue;
      const int32_t acc = q.n_draft > 0 && step % 2 == 0 ? q.n_draft : 0;
      results.push_back(StepResult{argmax(logits.data() + static_cast<size_t>(row + acc) * V, V),
                                   FinishReason::kNone, acc});
      row += q.n_logit_rows();
    }
    StepOutcome out;
    sched.commit(plan, results, out);
    drafter.run(plan, b, sched, [](RequestId) { return true; });
    sched.check_integrity();
  }
  EXPECT_TRUE(sched.idle());
  EXPECT_GT(n_checked, 10);
}

TEST(MtpDrafter, DraftsEqualTheModuleRunOnceOverTheSequenceV3) { drafts_match_one_shot("tiny"); }
TEST(MtpDrafter, DraftsEqualTheModuleRunOnceOverTheSequenceV32) {
  drafts_match_one_shot("tiny-v32");
}

// 32 greedy requests (prompts 1..150 tokens, 1..40 new tokens) and the golden tiny-v3 prompts
// (1..300 tokens, 24 new tokens) through an engine with MTP drafting K tokens: each request's
// tokens equal its greedy decode alone without MTP.
void mtp_greedy_equals_alone(const std::string& preset, int32_t k) {
  const std::string dir = mtp_model(preset);
  LoadOptions lo{dir};
  lo.matmul_dtype = MatmulDType::kF32;
  auto plain = Model::load(lo);
  ASSERT_TRUE(plain.is_ok()) << plain.message();
  EngineOptions o;
  o.model_dir = dir;
  o.page_size = 16;
  o.max_running_requests = 16;
  o.chunked_prefill_size = 64;
  o.context_length = 512;
  o.debug_integrity = true;
  o.kv_cache_memory_bytes = 64 << 20;
  o.kv_cache_dtype = "f32";
  o.matmul_dtype = MatmulDType::kF32;
  o.speculative.algorithm = SpecAlgorithm::kNextn;
  o.speculative.num_steps = k;
  auto e = Engine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.message();
  Rng rng(23);
  EventCollector col;
  struct Sub {
    RequestId id;
    std::vector<TokenId> prompt;
    int32_t n;
  };
  std::vector<Sub> subs;
  for (int i = 0; i < 32; ++i) {
    GenerateRequest r;
    r.prompt.resize(1 + rng.next_u64() % 150);
    for (auto& t : r.prompt) t = static_cast<TokenId>(rng.next_u64() % kVocab);
    r.params.temperature = 0.0f;
    r.params.max_tokens = 1 + static_cast<int32_t>(rng.next_u64() % 40);
    r.params.ignore_eos = true;
    const Sub s{0, r.prompt, r.params.max_tokens};
    auto id = (*e)->submit(std::move(r), col.sink());
    ASSERT_TRUE(id.is_ok()) << id.message();
    subs.push_back({*id, s.prompt, s.n});
  }
  auto golden = load_json_file(std::string(DSS_TEST_DATA) + "/golden/tiny-v3/golden.json");
  ASSERT_TRUE(golden.is_ok());
  for (const Json& c : (*golden)["cases"]) {
    GenerateRequest r;
    r.prompt = c["prompt"].get<std::vector<TokenId>>();
    r.params.temperature = 0.0f;
    r.params.max_tokens = 24;
    r.params.ignore_eos = true;
    const std::vector<TokenId> prompt = r.prompt;
    auto id = (*e)->submit(std::move(r), col.sink());
    ASSERT_TRUE(id.is_ok()) << id.message();
    subs.push_back({*id, prompt, 24});
  }
  col.wait_done(static_cast<int>(subs.size()));
  for (const Sub& s : subs) {
    SequenceRunner r(**plain, static_cast<int32_t>(s.prompt.size()) + s.n, 64, 512);
    std::vector<TokenId> want;
    r.prefill(s.prompt, false,
              [&](int32_t, int32_t, const float* lg) { want.push_back(argmax(lg, kVocab)); });
    while (static_cast<int32_t>(want.size()) < s.n)
      want.push_back(argmax(r.decode(want.back()), kVocab));
    EXPECT_EQ(col.get(s.id).tokens, want) << preset << " K=" << k << " request " << s.id;
  }
  (*e)->check_integrity();
  const EngineStats st = (*e)->stats();
  EXPECT_EQ(st.kv_pages_used, st.kv_pages_cached);
  EXPECT_GT(st.spec.drafts, 0);
  EXPECT_GT(st.spec_draft_seconds, 0.0) << "the MTP drafter never ran";
  EXPECT_LE(st.spec.accepted_tokens, st.spec.draft_tokens);
}

TEST(MtpEngine, GreedyEqualsPlainV3) {
  for (int32_t k = 1; k <= 3; ++k) mtp_greedy_equals_alone("tiny", k);
}
TEST(MtpEngine, GreedyEqualsPlainV32) {
  for (int32_t k = 1; k <= 3; ++k) mtp_greedy_equals_alone("tiny-v32", k);
}

TEST(MtpEngine, CheckpointWithoutTheModuleIsAClearError) {
  EngineOptions o;
  o.model_dir = std::string(DSS_TEST_DATA) + "/golden/tiny-v3";
  o.speculative.algorithm = SpecAlgorithm::kNextn;
  o.kv_cache_memory_bytes = 16 << 20;
  auto e = Engine::create(o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_NE(e.message().find("num_nextn_predict_layers 0"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace dss
