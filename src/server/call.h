// OpenAiRoutes::Call: one generation request (POST /v1/chat/completions or /v1/completions)
// from its engine submissions to the last byte of its answer. OpenAiRoutes::generate builds it
// (one Choice per (prompt, n) pair, each with its ChoiceStream) and submits the engine requests;
// from then on the call turns engine events into SSE chunks or, folded, the non-streamed body.
//
// Threading: sink() runs on the engine thread and only queues the event and posts drain() to the
// connection's strand; every other member runs on that strand (drain, process, complete, ...),
// so the per-choice state needs no lock. `mu` guards `queue` and `scheduled` only.
// Ownership: shared by the engine sinks, the posted drains and OpenAiRoutes::live_ (weak); the
// routes (its engine, tokenizer and metrics) outlive every call.
// Completion: once every choice has its last engine event, complete() answers exactly once (the
// error, the final SSE chunks, or the JSON body) and tells the routes (on_call_done).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/openai_routes.h"
#include "server/response_json.h"

namespace dss {

struct OpenAiRoutes::Call {
  struct Choice {
    int32_t prompt_index = 0;
    RequestId id = 0;
    std::optional<ChoiceStream> stream;
    bool output_done = false;  // finish reason known, no more text
    bool done = false;         // the engine's last event arrived
    std::string finish_reason;
    TokenEvent last;
    double t_first = -1.0, t_last = 0.0;
    std::vector<TokenLogprob> logprobs;  // non-stream: all of them
    int64_t text_offset = 0;
  };

  OpenAiRoutes* routes = nullptr;
  std::shared_ptr<HttpExchange> ex;
  uint64_t call_id = 0;
  Endpoint endpoint = Endpoint::kChat;
  bool stream = false, include_usage = false, return_token_ids = false;
  int32_t logprobs = -1;
  std::string resp_id, model;
  int64_t created = 0;
  std::vector<std::vector<TokenId>> prompts;
  std::vector<Choice> choices;
  int32_t n_done = 0;
  bool completed = false;
  std::string error;               // an engine error
  int error_status = 500;          // its HTTP status (http_status_of in call.cc)
  std::optional<ApiError> reject;  // a submit refused: the whole call answers this instead

  std::mutex mu;  // guards queue / scheduled (engine thread vs strand)
  std::vector<std::pair<int32_t, TokenEvent>> queue;
  bool scheduled = false;

  // Engine thread: the sink of choice i_choice hands each event to the strand, never blocks.
  static EventSink sink(const std::shared_ptr<Call>& call, int32_t i_choice);
  // Cancels every submitted engine request (their last events still arrive).
  void cancel_engine_requests();

  // --- on the strand from here on ---
  // Processes the queued events, writes the stream's chunks, completes once all choices are done.
  void drain();
  // Flushes choice c's stream into d and records its finish reason ("stop" with tool calls
  // becomes "tool_calls").
  void end_output(Choice& c, ChoiceDelta& d, std::string reason);
  // One event of choice i: its delta appended to `out` as an SSE chunk (stream) or its logprobs
  // kept (non-stream); metrics recorded at the first token and the last event.
  void process(int32_t i, const TokenEvent& e, std::string& out);
  OrderedJson chunk_json(int32_t i, const ChoiceDelta& d, bool with_finish);
  OrderedJson header(const char* object) const;  // id, object, created, model
  Usage usage() const;                           // cached tokens counted once per prompt
  // Start of a stream: the role chunk of every choice (chat) or nothing (completions).
  void open_stream();
  // The answer, once: the reject, the stream's end, the error or the full response.
  void complete();
  OrderedJson full_response(const Usage& u) const;
};

}  // namespace dss
