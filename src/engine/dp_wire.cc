#include "engine/dp_wire.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "base/check.h"

namespace dss {
namespace {

class Writer {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put_vec(const std::vector<T>& v) {
    put(static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out_.insert(out_.end(), p, p + v.size() * sizeof(T));
  }
  void put_str(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  requires std::is_trivially_copyable_v<T> T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  std::vector<T> get_vec() {
    const auto n = get<uint64_t>();
    DSS_CHECK(n <= in_.size() / sizeof(T), "dp message: vector of ", n, " past the end");
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  std::string get_str() {
    const auto n = get<uint64_t>();
    DSS_CHECK(n <= in_.size(), "dp message: string of ", n, " past the end");
    const auto* p = reinterpret_cast<const char*>(take(n));
    return std::string(p, p + n);
  }
  void expect_end() const { DSS_CHECK(in_.empty(), "dp message: ", in_.size(), " bytes left"); }

 private:
  const uint8_t* take(size_t n) {
    DSS_CHECK(n <= in_.size(), "dp message: ", n, " bytes past the end");
    const uint8_t* p = in_.data();
    in_ = in_.subspan(n);
    return p;
  }
  std::span<const uint8_t> in_;
};

void put_params(Writer& w, const SamplingParams& p) {
  w.put(p.temperature);
  w.put(p.top_p);
  w.put(p.top_k);
  w.put(p.min_p);
  w.put(p.repetition_penalty);
  w.put(p.frequency_penalty);
  w.put(p.presence_penalty);
  w.put(p.seed.has_value());
  w.put(p.seed.value_or(0));
  w.put(p.max_tokens);
  w.put(p.min_tokens);
  w.put(p.ignore_eos);
  w.put_vec(p.stop_token_ids);
  w.put(static_cast<uint64_t>(p.stop.size()));
  for (const std::string& s : p.stop) w.put_str(s);
  w.put(p.include_stop_str_in_output);
  w.put(p.logprobs);
  w.put(p.skip_special_tokens);
}

SamplingParams get_params(Reader& r) {
  SamplingParams p;
  p.temperature = r.get<float>();
  p.top_p = r.get<float>();
  p.top_k = r.get<int32_t>();
  p.min_p = r.get<float>();
  p.repetition_penalty = r.get<float>();
  p.frequency_penalty = r.get<float>();
  p.presence_penalty = r.get<float>();
  const bool has_seed = r.get<bool>();
  const auto seed = r.get<uint64_t>();
  if (has_seed) p.seed = seed;
  p.max_tokens = r.get<int32_t>();
  p.min_tokens = r.get<int32_t>();
  p.ignore_eos = r.get<bool>();
  p.stop_token_ids = r.get_vec<TokenId>();
  const auto n_stop = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_stop; ++i) p.stop.push_back(r.get_str());
  p.include_stop_str_in_output = r.get<bool>();
  p.logprobs = r.get<int32_t>();
  p.skip_special_tokens = r.get<bool>();
  return p;
}

std::vector<uint8_t> encode_grammar(const grammar::CompiledGrammar& g) {
  const grammar::Bnf& b = g.bnf();
  Writer w;
  w.put_vec(b.sets);
  w.put_vec(b.elems);
  w.put_vec(b.alt_begin);
  w.put_vec(b.rule_alt_begin);
  w.put(static_cast<uint64_t>(b.rule_names.size()));
  for (const std::string& name : b.rule_names) w.put_str(name);
  w.put(b.root);
  w.put(g.options());
  return w.take();
}

}  // namespace

std::vector<uint8_t> encode_request(RequestId id, const GenerateRequest& r) {
  Writer w;
  w.put(id);
  w.put_vec(r.prompt);
  put_params(w, r.params);
  w.put(r.reasoning_end_token);
  w.put_str(r.reasoning_end_text);
  w.put(r.grammar_trigger_token);
  w.put_str(r.grammar_trigger_text);
  w.put_vec(r.grammar ? encode_grammar(*r.grammar) : std::vector<uint8_t>{});
  return w.take();
}

WireRequest decode_request(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  WireRequest out;
  out.id = r.get<RequestId>();
  out.req.prompt = r.get_vec<TokenId>();
  out.req.params = get_params(r);
  out.req.reasoning_end_token = r.get<TokenId>();
  out.req.reasoning_end_text = r.get_str();
  out.req.grammar_trigger_token = r.get<TokenId>();
  out.req.grammar_trigger_text = r.get_str();
  out.grammar = r.get_vec<uint8_t>();
  r.expect_end();
  return out;
}

std::shared_ptr<grammar::CompiledGrammar> make_grammar(
    std::span<const uint8_t> bytes, std::shared_ptr<const grammar::TokenVocab> vocab) {
  Reader r(bytes);
  grammar::Bnf b;
  b.sets = r.get_vec<grammar::ByteSet>();
  b.elems = r.get_vec<int32_t>();
  b.alt_begin = r.get_vec<int32_t>();
  b.rule_alt_begin = r.get_vec<int32_t>();
  const auto n_rules = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_rules; ++i) b.rule_names.push_back(r.get_str());
  b.root = r.get<int32_t>();
  const auto opts = r.get<grammar::CompileOptions>();
  r.expect_end();
  return std::make_shared<grammar::CompiledGrammar>(std::move(b), std::move(vocab), opts);
}

std::vector<uint8_t> encode_id(RequestId id) {
  Writer w;
  w.put(id);
  return w.take();
}

RequestId decode_id(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  const auto id = r.get<RequestId>();
  r.expect_end();
  return id;
}

std::vector<uint8_t> encode_events(std::span<const TokenEvent> events) {
  Writer w;
  w.put(static_cast<uint64_t>(events.size()));
  for (const TokenEvent& e : events) {
    w.put(e.id);
    w.put(e.has_token);
    w.put(e.token);
    w.put(e.logprob);
    w.put_vec(e.top_logprobs);
    w.put(e.finish);
    w.put_str(e.error);
    w.put(e.error_kind);
    w.put(e.n_prompt);
    w.put(e.n_cached_prompt);
    w.put(e.n_generated);
    w.put(e.t_arrival);
    w.put(e.t_scheduled);
    w.put(e.t_event);
  }
  return w.take();
}

std::vector<TokenEvent> decode_events(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  const auto n = r.get<uint64_t>();
  std::vector<TokenEvent> events;
  for (uint64_t i = 0; i < n; ++i) {
    TokenEvent e;
    e.id = r.get<RequestId>();
    e.has_token = r.get<bool>();
    e.token = r.get<TokenId>();
    e.logprob = r.get<float>();
    e.top_logprobs = r.get_vec<TopLogprob>();
    e.finish = r.get<FinishReason>();
    e.error = r.get_str();
    e.error_kind = r.get<RequestError>();
    e.n_prompt = r.get<int32_t>();
    e.n_cached_prompt = r.get<int32_t>();
    e.n_generated = r.get<int32_t>();
    e.t_arrival = r.get<double>();
    e.t_scheduled = r.get<double>();
    e.t_event = r.get<double>();
    events.push_back(std::move(e));
  }
  r.expect_end();
  return events;
}

std::vector<uint8_t> encode_stats(const EngineStats& s) {
  Writer w;
  w.put(s.n_running);
  w.put(s.n_waiting);
  w.put(s.kv_pages_total);
  w.put(s.kv_pages_used);
  w.put(s.kv_pages_cached);
  w.put(s.page_size);
  w.put(s.prefix_hit_tokens);
  w.put(s.prefix_query_tokens);
  w.put(s.prompt_tokens_computed);
  w.put(s.generation_tokens);
  w.put(s.preemptions);
  w.put(s.steps);
  w.put(s.busy_seconds);
  w.put(s.last_step_ms);
  w.put(s.requests_finished);
  w.put(s.batch_cap);
  w.put(s.batch_cap_raises);
  w.put(s.batch_cap_lowers);
  w.put(s.batch_cap_p99_tpot_ms);
  w.put(s.grammar_masks);
  w.put(s.grammar_mask_seconds);
  w.put_vec(s.ranks);
  w.put(s.spec_num_steps);
  w.put(s.spec.drafts);
  w.put(s.spec.draft_tokens);
  w.put(s.spec.accepted_tokens);
  w.put_vec(s.spec.accepted_per_pos);
  w.put_vec(s.spec.accepted_count);
  w.put(s.spec_draft_seconds);
  return w.take();
}

EngineStats decode_stats(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  EngineStats s;
  s.n_running = r.get<int32_t>();
  s.n_waiting = r.get<int32_t>();
  s.kv_pages_total = r.get<int32_t>();
  s.kv_pages_used = r.get<int32_t>();
  s.kv_pages_cached = r.get<int32_t>();
  s.page_size = r.get<int32_t>();
  s.prefix_hit_tokens = r.get<int64_t>();
  s.prefix_query_tokens = r.get<int64_t>();
  s.prompt_tokens_computed = r.get<int64_t>();
  s.generation_tokens = r.get<int64_t>();
  s.preemptions = r.get<int64_t>();
  s.steps = r.get<int64_t>();
  s.busy_seconds = r.get<double>();
  s.last_step_ms = r.get<double>();
  s.requests_finished = r.get<int64_t>();
  s.batch_cap = r.get<int32_t>();
  s.batch_cap_raises = r.get<int64_t>();
  s.batch_cap_lowers = r.get<int64_t>();
  s.batch_cap_p99_tpot_ms = r.get<double>();
  s.grammar_masks = r.get<int64_t>();
  s.grammar_mask_seconds = r.get<double>();
  s.ranks = r.get_vec<RankStats>();
  s.spec_num_steps = r.get<int32_t>();
  s.spec.drafts = r.get<int64_t>();
  s.spec.draft_tokens = r.get<int64_t>();
  s.spec.accepted_tokens = r.get<int64_t>();
  s.spec.accepted_per_pos = r.get_vec<int64_t>();
  s.spec.accepted_count = r.get_vec<int64_t>();
  s.spec_draft_seconds = r.get<double>();
  r.expect_end();
  return s;
}

namespace {

void add_counts(std::vector<int64_t>& into, const std::vector<int64_t>& r) {
  if (into.size() < r.size()) into.resize(r.size());
  for (size_t i = 0; i < r.size(); ++i) into[i] += r[i];
}

}  // namespace

void add_replica_stats(EngineStats& into, const EngineStats& r) {
  into.n_running += r.n_running;
  into.n_waiting += r.n_waiting;
  into.kv_pages_total += r.kv_pages_total;
  into.kv_pages_used += r.kv_pages_used;
  into.kv_pages_cached += r.kv_pages_cached;
  into.prefix_hit_tokens += r.prefix_hit_tokens;
  into.prefix_query_tokens += r.prefix_query_tokens;
  into.prompt_tokens_computed += r.prompt_tokens_computed;
  into.generation_tokens += r.generation_tokens;
  into.preemptions += r.preemptions;
  into.steps += r.steps;
  into.busy_seconds += r.busy_seconds;
  into.last_step_ms = std::max(into.last_step_ms, r.last_step_ms);
  into.requests_finished += r.requests_finished;
  into.batch_cap += r.batch_cap;
  into.batch_cap_raises += r.batch_cap_raises;
  into.batch_cap_lowers += r.batch_cap_lowers;
  into.batch_cap_p99_tpot_ms = std::max(into.batch_cap_p99_tpot_ms, r.batch_cap_p99_tpot_ms);
  into.grammar_masks += r.grammar_masks;
  into.grammar_mask_seconds += r.grammar_mask_seconds;
  into.ranks.insert(into.ranks.end(), r.ranks.begin(), r.ranks.end());
  into.spec.drafts += r.spec.drafts;
  into.spec.draft_tokens += r.spec.draft_tokens;
  into.spec.accepted_tokens += r.spec.accepted_tokens;
  add_counts(into.spec.accepted_per_pos, r.spec.accepted_per_pos);
  add_counts(into.spec.accepted_count, r.spec.accepted_count);
  into.spec_draft_seconds += r.spec_draft_seconds;
}

}  // namespace dss
