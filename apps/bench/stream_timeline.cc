#include "apps/bench/stream_timeline.h"

#include "base/str_cat.h"
#include "io/json.h"

namespace dss::bench {

namespace {

bool non_empty_string(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

// Appends the choice's text (content, reasoning, completion text) to `text`; true when the
// choice carried output on any channel.
bool choice_output(const Json& choice, std::string& text) {
  bool out = false;
  if (non_empty_string(choice, "text")) {
    text += choice["text"].get_ref<const std::string&>();
    out = true;
  }
  auto d = choice.find("delta");
  if (d == choice.end() || !d->is_object()) return out;
  for (const char* k : {"reasoning_content", "reasoning", "content"}) {
    if (non_empty_string(*d, k)) {
      text += (*d)[k].get_ref<const std::string&>();
      out = true;
    }
  }
  auto tc = d->find("tool_calls");
  if (tc != d->end() && tc->is_array() && !tc->empty()) out = true;
  return out;
}

}  // namespace

StreamTimeline::StreamTimeline(double start_time, int64_t planned_prompt_len) {
  r_.start_time = start_time;
  r_.prompt_len = planned_prompt_len;
}

void StreamTimeline::fail(std::string error) {
  if (r_.error.empty()) r_.error = std::move(error);
}

void StreamTimeline::on_event(double t, std::string_view data) {
  if (done_ || !r_.error.empty()) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  Json j = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail(str_cat("invalid JSON event: ", data));
  if (auto e = j.find("error"); e != j.end() && !e->is_null())
    return fail(str_cat("error event: ", e->dump()));
  last_event_t_ = t;
  bool output = false;
  if (auto c = j.find("choices"); c != j.end() && c->is_array())
    for (const Json& choice : *c) output |= choice_output(choice, r_.generated_text);
  if (output) {
    if (r_.n_output_chunks == 0) {
      r_.ttft = t - r_.start_time;
    } else {
      r_.itl.push_back(t - last_output_t_);
    }
    last_output_t_ = t;
    ++r_.n_output_chunks;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    if (auto p = u->find("prompt_tokens"); p != u->end() && p->is_number_integer())
      usage_prompt_ = p->get<int64_t>();
    if (auto c = u->find("completion_tokens"); c != u->end() && c->is_number_integer())
      usage_completion_ = c->get<int64_t>();
  }
}

RequestRecord StreamTimeline::finish() {
  if (r_.error.empty() && !done_) r_.error = "stream ended before data: [DONE]";
  if (r_.error.empty() && r_.n_output_chunks == 0) r_.error = "no output chunk in the stream";
  r_.success = r_.error.empty();
  r_.latency = last_event_t_ - r_.start_time;
  if (usage_prompt_) r_.prompt_len = *usage_prompt_;
  r_.output_tokens = usage_completion_ ? *usage_completion_ : r_.n_output_chunks;
  return std::move(r_);
}

}  // namespace dss::bench
