#include "server/openai_routes.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/str_cat.h"
#include "server/call.h"
#include "server/choice_stream.h"
#include "server/request_prep.h"
#include "server/schemas.h"
#include "server/tool_call_grammar.h"

#ifndef DSS_VERSION
#define DSS_VERSION "0.0.0"
#endif

namespace dss {

namespace {

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `Authorization: Bearer <key>`: the scheme case-insensitively (RFC 9110 section 11.1), the key
// exactly, compared in time independent of where it differs.
bool authorized(const std::string& header, const std::string& api_key) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  std::string_view key(header);
  key.remove_prefix(kScheme.size());
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  if (key.size() != api_key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(key[i] ^ api_key[i]);
  return diff == 0;
}

}  // namespace

OpenAiRoutes::OpenAiRoutes(EngineApi& engine, const Tokenizer* tok, Metrics& metrics,
                           RoutesConfig cfg)
    : engine_(engine),
      tok_(tok),
      metrics_(metrics),
      cfg_(std::move(cfg)),
      created_(unix_seconds()) {
  // Structured output needs the tokenizer's ids to be the model's (the vocabulary trie: ~60 ms).
  const ModelConfig& mc = engine_.model_config();
  if (tok_ != nullptr && tok_->n_ids() <= mc.n_vocab && tok_->eos_id() == mc.eos_token_id) {
    grammars_ = std::make_unique<grammar::GrammarCompiler>(
        grammar::TokenVocab::from_tokenizer(*tok_, mc.n_vocab, tool_call_control_tokens()));
  }
}

OpenAiRoutes::~OpenAiRoutes() = default;

void OpenAiRoutes::reply(HttpExchange& ex, int status, const std::string& body,
                         const char* content_type) {
  metrics_.record_http_status(status);
  ex.respond(status, content_type, body);
}

void OpenAiRoutes::reply_error(HttpExchange& ex, const ApiError& e) {
  reply(ex, e.status, e.to_json());
}

void OpenAiRoutes::handle(HttpRequest&& req, std::shared_ptr<HttpExchange> ex) {
  const std::string& path = req.path;
  const bool is_v1 = path.rfind("/v1/", 0) == 0;
  if (is_v1 && !cfg_.api_key.empty() && !authorized(req.header("authorization"), cfg_.api_key))
    return reply_error(
        *ex, ApiError{401, "invalid or missing API key (Authorization: Bearer ...)", "", ""});
  auto method_is = [&](const char* m) {
    if (req.method == m) return true;
    reply_error(*ex, ApiError{405, "method " + req.method + " not allowed on " + path, "", ""});
    return false;
  };
  if (path == "/v1/chat/completions" || path == "/v1/completions") {
    if (!method_is("POST")) return;
    return generate(path == "/v1/chat/completions" ? Endpoint::kChat : Endpoint::kCompletions, req,
                    std::move(ex));
  }
  if (path == "/health") {
    if (!method_is("GET")) return;
    if (failed_.load())
      return reply(*ex, 503, OrderedJson{{"status", "unhealthy"}, {"error", failed_why_}}.dump());
    if (draining_ && draining_()) return reply(*ex, 503, "{\"status\":\"shutting down\"}");
    return reply(*ex, 200, "{\"status\":\"ok\"}");
  }
  if (path == "/version") {
    if (!method_is("GET")) return;
    return reply(*ex, 200, OrderedJson{{"version", DSS_VERSION}}.dump());
  }
  if (path == "/metrics") {
    if (!method_is("GET")) return;
    return reply(*ex, 200, metrics_.render(engine_.stats(), now_seconds()),
                 "text/plain; version=0.0.4; charset=utf-8");
  }
  if (path == "/v1/models") {
    if (!method_is("GET")) return;
    OrderedJson m;
    m["id"] = cfg_.served_model_name;
    m["object"] = "model";
    m["created"] = created_;
    m["owned_by"] = "dsserve";
    m["root"] = cfg_.served_model_name;
    m["max_model_len"] = engine_.context_length();
    OrderedJson j;
    j["object"] = "list";
    j["data"] = OrderedJson::array({std::move(m)});
    return reply(*ex, 200, j.dump());
  }
  reply_error(*ex, ApiError{404, "no route for " + req.method + " " + path, "", ""});
}

void OpenAiRoutes::generate(Endpoint endpoint, const HttpRequest& req,
                            std::shared_ptr<HttpExchange> ex) {
  if (failed_.load()) return reply_error(*ex, ApiError{503, failed_why_, "", ""});
  if (draining_ && draining_())
    return reply_error(*ex, ApiError{503, "server is shutting down", "", ""});
  PreparedRequest prep;
  const PromptContext ctx{tok_,
                          cfg_.chat_format,
                          engine_.context_length(),
                          engine_.model_config().n_vocab,
                          cfg_.served_model_name,
                          grammars_.get(),
                          cfg_.tool_format};
  // prepare_request reports bad input as an ApiError; an exception from it (a JSON accessor used
  // on a mistyped key: a bug, which fuzz_request hunts) must still not take the process down.
  std::optional<ApiError> err;
  try {
    err = prepare_request(endpoint, req.body, ctx, prep);
  } catch (const std::exception& e) {
    log_error("request path threw: ", e.what());
    err = ApiError{500, str_cat("internal error while reading the request: ", e.what()), "", ""};
  }
  if (err) return reply_error(*ex, *err);
  CompletionRequest& r = prep.req;
  std::vector<std::vector<TokenId>>& prompts = prep.prompts;
  const bool starts_in_reasoning = prep.starts_in_reasoning;
  if (auto e = admit(static_cast<int32_t>(prompts.size()) * r.n)) return reply_error(*ex, *e);

  const uint64_t call_id = next_call_id_.fetch_add(1);
  auto call = std::make_shared<Call>();
  call->routes = this;
  call->ex = ex;
  call->call_id = call_id;
  call->endpoint = endpoint;
  call->stream = r.stream;
  call->include_usage = r.include_usage;
  call->return_token_ids = r.return_token_ids;
  call->logprobs = r.params.logprobs;
  char id_buf[40];
  std::snprintf(id_buf, sizeof id_buf, "%s-%016llx",
                endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(call_id * 0x9E3779B97F4A7C15ull));
  call->resp_id = id_buf;
  call->created = unix_seconds();
  call->model = cfg_.served_model_name;
  call->prompts = std::move(prompts);
  const ChoiceStreamOptions so = choice_options(r, call_id, starts_in_reasoning);
  for (size_t p = 0; p < call->prompts.size(); ++p) {
    for (int32_t k = 0; k < r.n; ++k) {
      Call::Choice c;
      c.prompt_index = static_cast<int32_t>(p);
      c.stream.emplace(tok_, so);
      call->choices.push_back(std::move(c));
    }
  }
  n_calls_.fetch_add(1);
  n_engine_requests_.fetch_add(static_cast<int64_t>(call->choices.size()));
  metrics_.stream_opened();
  {
    std::lock_guard<std::mutex> lk(mu_);
    live_[call_id] = call;
  }
  submit(call, prep);
}

std::optional<ApiError> OpenAiRoutes::admit(int32_t n_new) const {
  if (cfg_.max_queued_requests <= 0) return std::nullopt;
  if (n_new > cfg_.max_queued_requests)  // would never fit, however long the client retries
    return ApiError::bad_request(
        str_cat("n: the request fans out into ", n_new, " sequences (prompts x n), more than the ",
                cfg_.max_queued_requests, " the server queues at once (--max-queued-requests)"),
        "n");
  const int64_t waiting = n_engine_requests_.load() - engine_.stats().n_running;
  if (waiting + n_new <= cfg_.max_queued_requests) return std::nullopt;
  return ApiError{429, "too many queued requests (over --max-queued-requests); retry later", "",
                  ""};
}

ChoiceStreamOptions OpenAiRoutes::choice_options(const CompletionRequest& r, uint64_t call_id,
                                                 bool starts_in_reasoning) const {
  ChoiceStreamOptions so;
  so.chat = r.endpoint == Endpoint::kChat;
  so.format = cfg_.tool_format.value_or(cfg_.chat_format);
  so.parser.parse_tools =
      so.chat && cfg_.tool_format.has_value() && !r.chat.tools.empty() && r.tool_choice != "none";
  so.parser.parse_reasoning = so.chat && cfg_.parse_reasoning;
  so.parser.starts_in_reasoning = starts_in_reasoning && cfg_.parse_reasoning;
  so.parser.tool_id_prefix = "call_" + std::to_string(call_id) + "_";
  so.stop = r.params.stop;
  so.include_stop_str = r.params.include_stop_str_in_output;
  so.skip_special = r.params.skip_special_tokens;
  so.hidden_final_tokens = r.params.stop_token_ids;
  if (!r.params.ignore_eos) so.hidden_final_tokens.push_back(engine_.model_config().eos_token_id);
  return so;
}

// Runs on the connection's strand, so no posted event is drained before it returns.
void OpenAiRoutes::submit(const std::shared_ptr<Call>& call, const PreparedRequest& prep) {
  const int32_t n = prep.req.n;
  // With thinking on (the prompt opens <think>) and the reasoning parser splitting it off, the
  // grammar constrains the content after `</think>`, not the reasoning.
  const bool gate = prep.grammar && prep.starts_in_reasoning && cfg_.parse_reasoning;
  const TokenId end_token =
      gate && tok_ != nullptr ? tok_->added_token_id("</think>").value_or(-1) : -1;
  for (size_t i = 0; i < call->choices.size(); ++i) {
    Call::Choice& c = call->choices[i];
    GenerateRequest g;
    g.prompt = call->prompts[c.prompt_index];
    g.params = prep.req.params;
    g.grammar = prep.grammar;  // one compiled grammar; the engine keeps a matcher per choice
    if (gate) {
      g.reasoning_end_token = end_token;
      g.reasoning_end_text = "</think>";
    }
    if (prep.grammar_after_tool_marker) {
      g.grammar_trigger_text = tool_call_block_marker(*cfg_.tool_format);
      if (tok_ != nullptr)
        g.grammar_trigger_token = tok_->added_token_id(g.grammar_trigger_text).value_or(-1);
    }
    if (g.params.seed) g.params.seed = *g.params.seed + static_cast<uint64_t>(i % n);
    auto id = engine_.submit(std::move(g), Call::sink(call, static_cast<int32_t>(i)));
    if (!id) {
      // The call answers 400 once the requests already submitted have delivered their last
      // (aborted) events; the rest are never submitted.
      call->reject = ApiError::from_status(id.status());
      call->cancel_engine_requests();
      for (size_t j = i; j < call->choices.size(); ++j) {
        call->choices[j].done = call->choices[j].output_done = true;
        call->choices[j].finish_reason = "error";
        ++call->n_done;
      }
      call->drain();
      return;
    }
    c.id = *id;
  }
  if (call->stream) call->open_stream();
  std::weak_ptr<Call> weak = call;
  call->ex->on_close([weak] {
    if (auto c = weak.lock()) c->cancel_engine_requests();
  });
}

void OpenAiRoutes::on_call_done(uint64_t call_id, int32_t n_engine_requests) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (live_.erase(call_id) == 0) return;
  }
  n_engine_requests_.fetch_sub(n_engine_requests);
  n_calls_.fetch_sub(1);
  metrics_.stream_closed();
}

void OpenAiRoutes::fail_all(const std::string& why) {
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (failed_.load()) return;
    failed_why_ = why;
    failed_.store(true);
    for (auto& [id, w] : live_)
      if (auto c = w.lock()) calls.push_back(std::move(c));
  }
  for (auto& c : calls) {
    c->ex->post([c, why] {
      if (c->completed) return;
      c->error = why;
      c->error_status = 503;
      c->complete();
    });
  }
}

void OpenAiRoutes::cancel_all() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& [id, w] : live_)
      if (auto c = w.lock()) calls.push_back(std::move(c));
  }
  for (auto& c : calls) c->ex->post([c] { c->cancel_engine_requests(); });
}

}  // namespace dss
