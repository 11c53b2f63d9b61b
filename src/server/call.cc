#include "server/call.h"

#include <string>
#include <utility>
#include <vector>

#include "sample/finish.h"
#include "server/sse.h"

namespace dss {

namespace {

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
    case RequestError::kGrammarDeadEnd:
      break;
  }
  return 500;
}

}  // namespace

EventSink OpenAiRoutes::Call::sink(const std::shared_ptr<Call>& call, int32_t i_choice) {
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

void OpenAiRoutes::Call::cancel_engine_requests() {
  for (const Choice& c : choices)
    if (c.id != 0) routes->engine_.cancel(c.id);
}

void OpenAiRoutes::Call::drain() {
  std::vector<std::pair<int32_t, TokenEvent>> events;
  {
    std::lock_guard<std::mutex> lk(mu);
    events.swap(queue);
    scheduled = false;
  }
  if (completed) return;  // answered already (OpenAiRoutes::fail_all): late events are dropped
  std::string out;
  for (auto& [i, e] : events) process(i, e, out);
  if (stream && !reject && !out.empty()) ex->write(std::move(out));
  if (n_done == static_cast<int32_t>(choices.size()) && !completed) complete();
}

void OpenAiRoutes::Call::end_output(Choice& c, ChoiceDelta& d, std::string reason) {
  c.stream->finish(d);
  c.output_done = true;
  if (reason == "stop" && c.stream->has_tool_calls()) reason = "tool_calls";
  c.finish_reason = std::move(reason);
}

void OpenAiRoutes::Call::process(int32_t i, const TokenEvent& e, std::string& out) {
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
        end_output(c, d, e.finish == FinishReason::kAbort ? "abort" : finish_reason_name(e.finish));
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

OrderedJson OpenAiRoutes::Call::chunk_json(int32_t i, const ChoiceDelta& d, bool with_finish) {
  Choice& c = choices[i];
  OrderedJson j = header(endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
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

OrderedJson OpenAiRoutes::Call::header(const char* object) const {
  OrderedJson j;
  j["id"] = resp_id;
  j["object"] = object;
  j["created"] = created;
  j["model"] = model;
  return j;
}

Usage OpenAiRoutes::Call::usage() const {
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

void OpenAiRoutes::Call::open_stream() {
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

void OpenAiRoutes::Call::complete() {
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

OrderedJson OpenAiRoutes::Call::full_response(const Usage& u) const {
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

}  // namespace dss
