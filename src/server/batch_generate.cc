#include "server/batch_generate.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "sample/finish.h"
#include "server/choice_stream.h"
#include "server/schemas.h"

namespace dss {

Result<BatchRequest> parse_batch_request(const std::string& line, const SamplingParams& defaults,
                                         const PromptEncoder& encode) {
  OrderedJson j = OrderedJson::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error("not a JSON object");
  BatchRequest r;
  r.params = defaults;
  DSS_RETURN_IF_ERROR(parse_sampling_params(j, r.params));
  if (j.contains("prompt_ids")) {
    if (!j["prompt_ids"].is_array())
      return Status::error("prompt_ids: must be a list of token ids");
    for (const auto& t : j["prompt_ids"]) {
      // Range only (an id outside int32 would wrap); the engine rejects ids outside the
      // vocabulary per request.
      if (!t.is_number_integer() || t.get<int64_t>() < INT32_MIN || t.get<int64_t>() > INT32_MAX)
        return Status::error("prompt_ids: must be a list of token ids");
      r.prompt.push_back(t.get<TokenId>());
    }
  } else if (j.contains("prompt") && j["prompt"].is_string()) {
    auto ids = encode(j["prompt"].get<std::string>());
    if (!ids) return Status::error("prompt: ", ids.message());
    r.prompt = std::move(ids).value();
  } else {
    return Status::error("needs \"prompt_ids\" (list of ids) or \"prompt\" (text)");
  }
  return r;
}

namespace {

// One request in flight: its completions pipeline (no hidden final tokens: the text of an EOS or
// stop token id is shown unless skip_special_tokens hides it) and what its result needs.
struct Running {
  std::optional<ChoiceStream> stream;
  TokenEvent last;
  double t_first = 0.0;
  bool done = false;
};

ChoiceStreamOptions completions_options(const SamplingParams& p) {
  ChoiceStreamOptions so;
  so.chat = false;
  so.stop = p.stop;
  so.include_stop_str = p.include_stop_str_in_output;
  so.skip_special = p.skip_special_tokens;
  return so;
}

// Feeds one event to its request; true when the request has ended (its last event, or a stop
// string that matched: the caller cancels the engine request then).
bool consume(Running& r, const TokenEvent& e, BatchResult& out) {
  if (e.has_token) {
    if (r.stream->token_ids().empty()) r.t_first = e.t_event;
    ChoiceDelta d;
    r.stream->push_token(e, false, d);
    if (e.is_last() && !r.stream->stopped()) r.stream->finish(d);
    if (r.stream->stopped()) {
      r.last = e;
      out.finish_reason = "stop";
      return true;
    }
  }
  if (!e.is_last()) return false;
  r.last = e;
  out.error = e.error;
  out.finish_reason = finish_reason_name(e.finish);
  return true;
}

}  // namespace

std::vector<BatchResult> run_batch(Engine& engine, const Tokenizer* tok,
                                   const std::vector<BatchRequest>& requests) {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<TokenEvent> queue;
  auto sink = [&](TokenEvent&& e) {
    std::lock_guard<std::mutex> lk(mu);
    queue.push_back(std::move(e));
    cv.notify_one();
  };
  std::vector<BatchResult> results(requests.size());
  std::vector<Running> running(requests.size());
  std::map<RequestId, size_t> by_id;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto id = engine.submit(GenerateRequest{requests[i].prompt, requests[i].params}, sink);
    if (!id) {
      results[i].error = id.message();
      running[i].done = true;
      continue;
    }
    by_id[*id] = i;
    running[i].stream.emplace(tok, completions_options(requests[i].params));
  }
  size_t n_open = by_id.size();
  while (n_open > 0) {
    TokenEvent e;
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return !queue.empty(); });
      e = std::move(queue.front());
      queue.pop_front();
    }
    const size_t i = by_id.at(e.id);
    Running& r = running[i];
    if (r.done || !consume(r, e, results[i])) continue;
    if (!e.is_last()) engine.cancel(e.id);  // a stop string ended it first
    r.done = true;
    --n_open;
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    Running& r = running[i];
    BatchResult& out = results[i];
    if (!r.stream) continue;
    out.output_ids = r.stream->token_ids();
    out.text = r.stream->text();
    out.n_cached_prompt = r.last.n_cached_prompt;
    out.queue_s = r.last.t_scheduled > 0 ? r.last.t_scheduled - r.last.t_arrival : 0.0;
    out.ttft_s = r.t_first > 0 ? r.t_first - r.last.t_arrival : 0.0;
    out.e2e_s = r.last.t_event - r.last.t_arrival;
  }
  return results;
}

OrderedJson batch_result_json(size_t index, const BatchRequest& request, const BatchResult& result,
                              bool with_text) {
  OrderedJson o;
  o["index"] = index;
  if (!result.error.empty()) {
    o["error"] = result.error;
    return o;
  }
  o["prompt_tokens"] = request.prompt.size();
  o["cached_tokens"] = result.n_cached_prompt;
  o["output_ids"] = result.output_ids;
  if (with_text) o["text"] = result.text;
  o["finish_reason"] = result.finish_reason;
  o["queue_s"] = result.queue_s;
  o["ttft_s"] = result.ttft_s;
  o["e2e_s"] = result.e2e_s;
  return o;
}

}  // namespace dss
