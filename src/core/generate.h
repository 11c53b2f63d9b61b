// The engine's request and event contracts (plain data, shared by engine, server and CLI).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/finish_reason.h"
#include "core/sampling_params.h"
#include "core/types.h"

namespace dss {

namespace grammar {
class CompiledGrammar;  // grammar/compiled_grammar.h (the engine links dss_grammar)
}

struct GenerateRequest {
  std::vector<TokenId> prompt;  // rendered and encoded already (no second BOS)
  SamplingParams params;
  // Structured output: when set, every generated token is one the grammar allows (the engine keeps
  // one matcher per request and masks the logits before sampling); the request ends with kStop
  // once the grammar is complete. Its vocabulary must be the model's. Null: unconstrained.
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  // Thinking mode: the grammar applies only after the reasoning section, which ends at the first
  // generated `reasoning_end_token` (when >= 0) or at the first occurrence of the bytes
  // `reasoning_end_text` in the output (when non-empty). Before that, any token but EOS.
  TokenId reasoning_end_token = -1;
  std::string reasoning_end_text;
  // Strict tools under tool_choice auto: after that, the grammar applies only once a tool-call
  // block starts: at the generated `grammar_trigger_token` (when >= 0) or the bytes
  // `grammar_trigger_text` (when non-empty). Before that, any token, EOS included.
  TokenId grammar_trigger_token = -1;
  std::string grammar_trigger_text;
};

// Why the engine failed a request (the server maps each to an HTTP status).
enum class RequestError : uint8_t {
  kNone,
  kRejected,         // not admissible (e.g. it can never fit in the KV pool): the client's input
  kNonFiniteLogits,  // the model produced NaN/Inf logits for it (bad weights or overflow)
  kTimeout,          // it ran past --request-timeout
  kQueueTimeout,     // it waited past --max-queue-time before being scheduled
  kGrammarDeadEnd,   // its output grammar allowed no token (a grammar bug): the server's fault
};

struct TopLogprob {
  TokenId token = 0;
  float logprob = 0.0f;
};

// One event per sampled token, plus a final event. Events of one request arrive in order, on the
// engine thread: a sink must not block (push into its own queue and return).
struct TokenEvent {
  RequestId id = 0;
  bool has_token = false;
  TokenId token = 0;
  float logprob = 0.0f;                           // when params.logprobs >= 0
  std::vector<TopLogprob> top_logprobs;           // when params.logprobs >= 1
  FinishReason finish = FinishReason::kNone;      // != kNone: this is the request's last event
  std::string error;                              // non-empty: the request failed (last event)
  RequestError error_kind = RequestError::kNone;  // what kind of failure `error` describes
  // Usage, filled on the last event.
  int32_t n_prompt = 0;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache
  int32_t n_generated = 0;
  // Timings on the engine's monotonic clock (seconds): arrival, first scheduled, this event.
  double t_arrival = 0.0, t_scheduled = 0.0, t_event = 0.0;

  bool is_last() const { return finish != FinishReason::kNone || !error.empty(); }
};

using EventSink = std::function<void(TokenEvent&&)>;

}  // namespace dss
