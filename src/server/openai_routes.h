// OpenAiRoutes: the endpoints of `dsserve serve` over an HttpExchange.
//   POST /v1/chat/completions, POST /v1/completions   (stream and non-stream; schemas.h)
//   GET  /v1/models, /health, /metrics, /version
// A generation request becomes one engine request per (prompt, choice) (n > 1 fans out; choice
// i of a seeded request uses seed + i). Engine events are posted to the connection's strand,
// where each choice's ChoiceStream detokenizes, applies stop strings and parses; the same
// deltas make SSE chunks or, folded, the non-streamed body. A client that goes away cancels its
// engine requests. Errors: OpenAI JSON with 400 (param = the field), 401 (--api-key, /v1/*
// only), 404 (path or model), 405, 413 (transport), 429 (queue over --max-queued-requests),
// 503 (shutting down, --max-queue-time), 500 (non-finite logits), 504 (--request-timeout).
// Threading: handle() runs on io threads; in_flight() and cancel_all() on any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_api.h"
#include "grammar/grammar_compiler.h"
#include "server/api_error.h"
#include "server/choice_stream.h"
#include "server/http_exchange.h"
#include "server/metrics.h"
#include "server/schemas.h"
#include "server/server_options.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace dss {

struct PreparedRequest;

struct RoutesConfig {
  std::string served_model_name;
  ChatFormat chat_format = ChatFormat::kV3;  // prompt rendering
  std::optional<ChatFormat> tool_format;     // output tool-call parsing; nullopt = off
  bool parse_reasoning = true;
  std::string api_key;
  int32_t max_queued_requests = 1024;
};

class OpenAiRoutes {
 public:
  // `tok` may be null (--skip-tokenizer-init). engine, tok and metrics must outlive this.
  OpenAiRoutes(EngineApi& engine, const Tokenizer* tok, Metrics& metrics, RoutesConfig cfg);
  ~OpenAiRoutes();

  void handle(HttpRequest&& req, std::shared_ptr<HttpExchange> ex);
  int64_t in_flight() const { return n_calls_.load(); }
  const RoutesConfig& config() const { return cfg_; }
  void cancel_all();
  // The engine cannot go on (a parallel job lost a rank: engine/step_watchdog.h): every open call
  // answers `why` now as a 503 (a stream: a last error event and [DONE]), without waiting for its
  // engine events; /health and new requests get 503 from then on. Any thread.
  void fail_all(const std::string& why);
  // Requests arriving while this returns true get 503.
  void set_draining(std::function<bool()> draining) { draining_ = std::move(draining); }

  struct Call;  // one generation request (server/call.h)

 private:
  void reply(HttpExchange& ex, int status, const std::string& body,
             const char* content_type = "application/json");
  void reply_error(HttpExchange& ex, const ApiError& e);
  void generate(Endpoint endpoint, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
  // Steps of generate() after prepare_request (request_prep.h): the error to answer, or nullopt.
  std::optional<ApiError> admit(int32_t n_new) const;
  ChoiceStreamOptions choice_options(const CompletionRequest& r, uint64_t call_id,
                                     bool starts_in_reasoning) const;
  // Every choice's engine request; `prep` gives the parameters and the output grammar.
  void submit(const std::shared_ptr<Call>& call, const PreparedRequest& prep);
  void on_call_done(uint64_t call_id, int32_t n_engine_requests);

  EngineApi& engine_;
  const Tokenizer* tok_;
  Metrics& metrics_;
  RoutesConfig cfg_;
  // Structured output: compiled grammars, cached by source (null without a tokenizer).
  std::unique_ptr<grammar::GrammarCompiler> grammars_;
  std::function<bool()> draining_;
  std::atomic<bool> failed_{false};  // fail_all ran
  std::string failed_why_;           // written before failed_ is set, then constant
  int64_t created_ = 0;
  std::atomic<int64_t> n_calls_{0};
  std::atomic<int64_t> n_engine_requests_{0};
  std::atomic<uint64_t> next_call_id_{1};
  std::mutex mu_;
  std::map<uint64_t, std::weak_ptr<Call>> live_;  // for cancel_all
};

}  // namespace dss
