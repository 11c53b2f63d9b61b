#include "server/openai_routes.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/str_cat.h"
#include "sample/finish.h"
#include "server/choice_stream.h"
#include "server/request_prep.h"
#include "server/response_json.h"
#include "server/schemas.h"
#include "server/sse.h"

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

// The HTTP status of a request the engine failed.
int http_status_of(RequestError kind) {
  switch (kind) {
    case RequestError::kRejected:
      return 400;
    case RequestError::kTimeout:
      return 504;
    case RequestError::kQueueTimeout:
      return 503;
    case RequestError::kNone:
    case RequestError::kNonFiniteLogits:
      break;
  }
  return 500;
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
  int error_status = 500;          // its HTTP status (http_status_of)
  std::optional<ApiError> reject;  // a submit refused: the whole call answers this instead

  std::mutex mu;  // guards queue / scheduled (engine thread vs strand)
  std::vector<std::pair<int32_t, TokenEvent>> queue;
  bool scheduled = false;

  // Engine thread: hand the event to the strand, never block.
  static EventSink sink(const std::shared_ptr<Call>& call, int32_t i_choice) {
    return [call, i_choice](TokenEvent&& e) {
      bool post = false;
      {
        std::lock_guard<std::mutex> lk(call->mu);
        call->queue.emplace_back(i_choice, std::move(e));
        post = !call->scheduled;
        call->scheduled = true;
      }
      if (post) call->ex->post([call] { call->drain(); });
    };
  }

  void cancel_engine_requests() {
    for (const Choice& c : choices)
      if (c.id != 0) routes->engine_.cancel(c.id);
  }

  // --- on the strand from here on ---
  void drain() {
    std::vector<std::pair<int32_t, TokenEvent>> events;
    {
      std::lock_guard<std::mutex> lk(mu);
      events.swap(queue);
      scheduled = false;
    }
    std::string out;
    for (auto& [i, e] : events) process(i, e, out);
    if (stream && !reject && !out.empty()) ex->write(std::move(out));
    if (n_done == static_cast<int32_t>(choices.size()) && !completed) complete();
  }

  void end_output(Choice& c, ChoiceDelta& d, std::string reason) {
    c.stream->finish(d);
    c.output_done = true;
    if (reason == "stop" && c.stream->has_tool_calls()) reason = "tool_calls";
    c.finish_reason = std::move(reason);
  }

  void process(int32_t i, const TokenEvent& e, std::string& out) {
    Choice& c = choices[i];
    if (c.done) return;
    Metrics& m = routes->metrics_;
    ChoiceDelta d;
    const bool was_done = c.output_done;
    if (e.has_token && !c.output_done) {
      if (c.t_first < 0)
        c.t_first = e.t_event;
      else
        m.record_inter_token(e.t_event - c.t_last);
      c.t_last = e.t_event;
      c.stream->push_token(e, logprobs >= 0, d);
      if (c.stream->stopped()) {  // a stop string: end the output here, free the engine request
        routes->engine_.cancel(c.id);
        end_output(c, d, "stop");
      }
    }
    if (e.is_last()) {
      c.done = true;
      c.last = e;
      ++n_done;
      if (!c.output_done) {
        if (!e.error.empty()) {
          error = e.error;
          error_status = http_status_of(e.error_kind);
          end_output(c, d, "error");
        } else {
          end_output(c, d,
                     e.finish == FinishReason::kAbort ? "abort" : finish_reason_name(e.finish));
        }
      }
      const double queue_s = e.t_scheduled > 0 ? e.t_scheduled - e.t_arrival : 0.0;
      m.record_request(c.finish_reason, e.n_prompt, c.stream->n_tokens(), queue_s,
                       c.t_first >= 0 ? c.t_first - e.t_arrival : -1.0, e.t_event - e.t_arrival);
    }
    const bool finishing = c.output_done && !was_done;
    if (stream) {
      if (d.has_payload() || finishing) out += sse_event(chunk_json(i, d, finishing).dump());
    } else {
      c.logprobs.insert(c.logprobs.end(), d.logprobs.begin(), d.logprobs.end());
    }
  }

  OrderedJson chunk_json(int32_t i, const ChoiceDelta& d, bool with_finish) {
    Choice& c = choices[i];
    OrderedJson j =
        header(endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
    OrderedJson ch;
    ch["index"] = i;
    const Tokenizer* tok = routes->tok_;
    if (endpoint == Endpoint::kChat) {
      OrderedJson delta = OrderedJson::object();
      const Json dj = to_openai_delta(d.events);
      for (auto it = dj.begin(); it != dj.end(); ++it) delta[it.key()] = it.value();
      ch["delta"] = std::move(delta);
      ch["logprobs"] = logprobs >= 0 && !d.logprobs.empty() ? chat_logprobs_json(tok, d.logprobs)
                                                            : OrderedJson(nullptr);
    } else {
      ch["text"] = d.text;
      if (logprobs >= 0 && !d.logprobs.empty()) {
        ch["logprobs"] = completion_logprobs_json(tok, d.logprobs, c.text_offset);
        for (const auto& t : ch["logprobs"]["tokens"])
          c.text_offset += static_cast<int64_t>(t.get<std::string>().size());
      } else {
        ch["logprobs"] = nullptr;
      }
    }
    ch["finish_reason"] = with_finish ? OrderedJson(c.finish_reason) : OrderedJson(nullptr);
    if (return_token_ids) ch["token_ids"] = d.token_ids;
    j["choices"] = OrderedJson::array({std::move(ch)});
    if (include_usage) j["usage"] = nullptr;
    return j;
  }

  OrderedJson header(const char* object) const {
    OrderedJson j;
    j["id"] = resp_id;
    j["object"] = object;
    j["created"] = created;
    j["model"] = model;
    return j;
  }

  Usage usage() const {
    Usage u;
    for (const auto& p : prompts) u.prompt_tokens += static_cast<int64_t>(p.size());
    std::vector<bool> seen(prompts.size(), false);
    for (const Choice& c : choices) {
      u.completion_tokens += c.stream->n_tokens();
      if (!seen[c.prompt_index]) u.cached_tokens += c.last.n_cached_prompt;
      seen[c.prompt_index] = true;
    }
    return u;
  }

  // Start of a stream: the role chunk of every choice (chat) or nothing (completions).
  void open_stream() {
    routes->metrics_.record_http_status(200);
    ex->begin_stream(200, "text/event-stream");
    if (endpoint != Endpoint::kChat) return;
    std::string out;
    for (size_t i = 0; i < choices.size(); ++i) {
      OrderedJson j = header("chat.completion.chunk");
      OrderedJson ch;
      ch["index"] = i;
      ch["delta"] = {{"role", "assistant"}, {"content", ""}};
      ch["logprobs"] = nullptr;
      ch["finish_reason"] = nullptr;
      j["choices"] = OrderedJson::array({std::move(ch)});
      if (include_usage) j["usage"] = nullptr;
      if (return_token_ids && i == 0) j["prompt_token_ids"] = prompts[0];
      out += sse_event(j.dump());
    }
    ex->write(std::move(out));
  }

  void complete() {
    completed = true;
    const Usage u = usage();
    if (reject) {
      routes->reply_error(*ex, *reject);
    } else if (stream) {
      std::string out;
      if (!error.empty()) {
        out += sse_event(ApiError{error_status, error, "", ""}.to_json());
      } else if (include_usage) {
        OrderedJson j =
            header(endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
        j["choices"] = OrderedJson::array();
        j["usage"] = usage_json(u);
        out += sse_event(j.dump());
      }
      out += sse_done();
      ex->write(std::move(out));
      ex->end_stream();
    } else if (!error.empty()) {
      routes->reply_error(*ex, ApiError{error_status, error, "", ""});
    } else {
      routes->reply(*ex, 200, full_response(u).dump());
    }
    routes->on_call_done(call_id, static_cast<int32_t>(choices.size()));
  }

  OrderedJson full_response(const Usage& u) const {
    const bool chat = endpoint == Endpoint::kChat;
    OrderedJson j = header(chat ? "chat.completion" : "text_completion");
    j["choices"] = OrderedJson::array();
    const Tokenizer* tok = routes->tok_;
    for (size_t i = 0; i < choices.size(); ++i) {
      const Choice& c = choices[i];
      OrderedJson ch;
      ch["index"] = i;
      if (chat) {
        ch["message"] = chat_message_json(c.stream->output());
        ch["logprobs"] = logprobs >= 0 ? chat_logprobs_json(tok, c.logprobs) : OrderedJson(nullptr);
      } else {
        ch["text"] = c.stream->text();
        ch["logprobs"] =
            logprobs >= 0 ? completion_logprobs_json(tok, c.logprobs, 0) : OrderedJson(nullptr);
      }
      ch["finish_reason"] = c.finish_reason;
      if (return_token_ids) {
        ch["token_ids"] = c.stream->token_ids();
        if (!chat) ch["prompt_token_ids"] = prompts[c.prompt_index];
      }
      j["choices"].push_back(std::move(ch));
    }
    j["usage"] = usage_json(u);
    if (return_token_ids && chat) j["prompt_token_ids"] = prompts[0];
    return j;
  }
};

OpenAiRoutes::OpenAiRoutes(Engine& engine, const Tokenizer* tok, Metrics& metrics, RoutesConfig cfg)
    : engine_(engine),
      tok_(tok),
      metrics_(metrics),
      cfg_(std::move(cfg)),
      created_(unix_seconds()) {}

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
    return generate(path == "/v1/chat/completions" ? 0 : 1, req, std::move(ex));
  }
  if (path == "/health") {
    if (!method_is("GET")) return;
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

void OpenAiRoutes::generate(int endpoint_i, const HttpRequest& req,
                            std::shared_ptr<HttpExchange> ex) {
  const Endpoint endpoint = endpoint_i == 0 ? Endpoint::kChat : Endpoint::kCompletions;
  if (draining_ && draining_())
    return reply_error(*ex, ApiError{503, "server is shutting down", "", ""});
  PreparedRequest prep;
  const PromptContext ctx{tok_, cfg_.chat_format, engine_.context_length(),
                          engine_.model_config().n_vocab, cfg_.served_model_name};
  if (auto e = prepare_request(endpoint, req.body, ctx, prep)) return reply_error(*ex, *e);
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
  submit(call, r.params, r.n);
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
void OpenAiRoutes::submit(const std::shared_ptr<Call>& call, const SamplingParams& params,
                          int32_t n) {
  for (size_t i = 0; i < call->choices.size(); ++i) {
    Call::Choice& c = call->choices[i];
    GenerateRequest g{call->prompts[c.prompt_index], params};
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
