// The data-parallel front's messages (engine/dp_wire.h): every field survives encode + decode,
// and the replicas' statistics add up.
#include "engine/dp_wire.h"

#include <gtest/gtest.h>

#include "grammar/grammar_compiler.h"

namespace dss {
namespace {

TEST(DpWire, RequestRoundTrip) {
  GenerateRequest r;
  r.prompt = {5, 0, 129279, 17};
  SamplingParams& p = r.params;
  p.temperature = 0.7f;
  p.top_p = 0.9f;
  p.top_k = 40;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = -0.25f;
  p.seed = 0xfeedface12345ull;
  p.max_tokens = 321;
  p.min_tokens = 3;
  p.ignore_eos = true;
  p.stop_token_ids = {1, 2};
  p.stop = {"\n\n", "", "é"};
  p.include_stop_str_in_output = true;
  p.logprobs = 5;
  p.skip_special_tokens = false;
  const WireRequest w = decode_request(encode_request(42, r));
  const GenerateRequest& q = w.req;
  EXPECT_EQ(w.id, 42u);
  EXPECT_TRUE(w.grammar.empty());
  EXPECT_EQ(q.prompt, r.prompt);
  const SamplingParams& o = q.params;
  EXPECT_EQ(o.temperature, p.temperature);
  EXPECT_EQ(o.top_p, p.top_p);
  EXPECT_EQ(o.top_k, p.top_k);
  EXPECT_EQ(o.min_p, p.min_p);
  EXPECT_EQ(o.repetition_penalty, p.repetition_penalty);
  EXPECT_EQ(o.frequency_penalty, p.frequency_penalty);
  EXPECT_EQ(o.presence_penalty, p.presence_penalty);
  EXPECT_EQ(o.seed, p.seed);
  EXPECT_EQ(o.max_tokens, p.max_tokens);
  EXPECT_EQ(o.min_tokens, p.min_tokens);
  EXPECT_EQ(o.ignore_eos, p.ignore_eos);
  EXPECT_EQ(o.stop_token_ids, p.stop_token_ids);
  EXPECT_EQ(o.stop, p.stop);
  EXPECT_EQ(o.include_stop_str_in_output, p.include_stop_str_in_output);
  EXPECT_EQ(o.logprobs, p.logprobs);
  EXPECT_EQ(o.skip_special_tokens, p.skip_special_tokens);
  r.params.seed.reset();
  EXPECT_FALSE(decode_request(encode_request(1, r)).req.params.seed.has_value());
}

// A grammar sent as its lowered form and bound to another copy of the vocabulary allows exactly
// what the original allows, token by token.
TEST(DpWire, GrammarRoundTrip) {
  std::vector<std::pair<TokenId, std::string>> tokens;
  for (int c = 0; c < 128; ++c) tokens.emplace_back(c, std::string(1, static_cast<char>(c)));
  tokens.emplace_back(128, "ab");
  auto vocab = std::make_shared<const grammar::TokenVocab>(tokens, 130, 129);
  grammar::GrammarCompiler compiler(vocab);
  auto g = compiler.regex("a(b|c)+d");
  ASSERT_TRUE(g) << g.message();
  GenerateRequest r;
  r.prompt = {1};
  r.grammar = *g;
  r.reasoning_end_token = 7;
  r.reasoning_end_text = "</think>";
  r.grammar_trigger_token = 9;
  r.grammar_trigger_text = "<tool>";
  const WireRequest w = decode_request(encode_request(3, r));
  EXPECT_EQ(w.req.reasoning_end_token, 7);
  EXPECT_EQ(w.req.reasoning_end_text, "</think>");
  EXPECT_EQ(w.req.grammar_trigger_token, 9);
  EXPECT_EQ(w.req.grammar_trigger_text, "<tool>");
  ASSERT_FALSE(w.grammar.empty());
  auto copy =
      make_grammar(w.grammar, std::make_shared<const grammar::TokenVocab>(tokens, 130, 129));
  const size_t n_words = static_cast<size_t>(vocab->n_words());
  std::vector<uint64_t> a(n_words), b(n_words);
  int32_t sa = (*g)->initial_state(), sb = copy->initial_state();
  for (const TokenId t : {TokenId{128}, TokenId{'c'}, TokenId{'b'}, TokenId{'d'}}) {  // "ab" c b d
    (*g)->fill_mask(sa, a);
    copy->fill_mask(sb, b);
    EXPECT_EQ(a, b);
    sa = (*g)->advance_token(sa, t);
    sb = copy->advance_token(sb, t);
    ASSERT_NE(sa, grammar::Automaton::kDead);
    ASSERT_NE(sb, grammar::Automaton::kDead);
  }
  EXPECT_TRUE((*g)->can_end(sa));
  EXPECT_TRUE(copy->can_end(sb));
}

TEST(DpWire, EventsRoundTrip) {
  std::vector<TokenEvent> in(3);
  in[0].id = 7;
  in[0].has_token = true;
  in[0].token = 99;
  in[0].logprob = -1.5f;
  in[0].top_logprobs = {{99, -1.5f}, {3, -2.0f}};
  in[1].id = 7;
  in[1].finish = FinishReason::kLength;
  in[1].n_prompt = 12;
  in[1].n_cached_prompt = 8;
  in[1].n_generated = 1;
  in[1].t_arrival = 1.25;
  in[1].t_scheduled = 1.5;
  in[1].t_event = 2.0;
  in[2].id = 9;
  in[2].error = "engine is shutting down";
  in[2].error_kind = RequestError::kRejected;
  const std::vector<TokenEvent> out = decode_events(encode_events(in));
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].id, in[i].id);
    EXPECT_EQ(out[i].has_token, in[i].has_token);
    EXPECT_EQ(out[i].token, in[i].token);
    EXPECT_EQ(out[i].logprob, in[i].logprob);
    ASSERT_EQ(out[i].top_logprobs.size(), in[i].top_logprobs.size());
    for (size_t k = 0; k < in[i].top_logprobs.size(); ++k) {
      EXPECT_EQ(out[i].top_logprobs[k].token, in[i].top_logprobs[k].token);
      EXPECT_EQ(out[i].top_logprobs[k].logprob, in[i].top_logprobs[k].logprob);
    }
    EXPECT_EQ(out[i].finish, in[i].finish);
    EXPECT_EQ(out[i].error, in[i].error);
    EXPECT_EQ(out[i].error_kind, in[i].error_kind);
    EXPECT_EQ(out[i].n_prompt, in[i].n_prompt);
    EXPECT_EQ(out[i].n_cached_prompt, in[i].n_cached_prompt);
    EXPECT_EQ(out[i].n_generated, in[i].n_generated);
    EXPECT_EQ(out[i].t_arrival, in[i].t_arrival);
    EXPECT_EQ(out[i].t_scheduled, in[i].t_scheduled);
    EXPECT_EQ(out[i].t_event, in[i].t_event);
  }
  EXPECT_TRUE(decode_events(encode_events({})).empty());
}

TEST(DpWire, StatsRoundTripAndSum) {
  EngineStats a;
  a.n_running = 3;
  a.kv_pages_total = 100;
  a.kv_pages_used = 10;
  a.generation_tokens = 1000;
  a.last_step_ms = 4.0;
  a.busy_seconds = 1.5;
  a.ranks = {{16, 0.5, 0.1, 4096}, {16, 0.6, 0.2, 4096}};
  a.spec_num_steps = 2;
  a.spec.count(2, 1);
  EngineStats b = decode_stats(encode_stats(a));
  EXPECT_EQ(b.n_running, 3);
  EXPECT_EQ(b.kv_pages_used, 10);
  EXPECT_EQ(b.generation_tokens, 1000);
  ASSERT_EQ(b.ranks.size(), 2u);
  EXPECT_EQ(b.ranks[1].forward_seconds, 0.6);
  EXPECT_EQ(b.spec.accepted_per_pos, a.spec.accepted_per_pos);
  EXPECT_EQ(b.spec.accepted_count, a.spec.accepted_count);
  b.last_step_ms = 9.0;
  b.spec.count(2, 2);
  add_replica_stats(a, b);
  EXPECT_EQ(a.n_running, 6);
  EXPECT_EQ(a.kv_pages_total, 200);
  EXPECT_EQ(a.generation_tokens, 2000);
  EXPECT_EQ(a.last_step_ms, 9.0);
  EXPECT_EQ(a.busy_seconds, 3.0);
  EXPECT_EQ(a.ranks.size(), 4u);
  EXPECT_EQ(a.spec.drafts, 3);
  EXPECT_EQ(a.spec.accepted_per_pos, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(a.spec.accepted_count, (std::vector<int64_t>{0, 2, 1}));
}

}  // namespace
}  // namespace dss
