// StreamTimeline: folds the SSE data events of one OpenAI-style streaming response (chat or
// completions) into a RequestRecord, with the client's receive time of each event.
//
// An event is an *output chunk* when one of its choices carries output on any channel:
// non-empty `delta.content`, `delta.reasoning_content`, `delta.reasoning`, `delta.tool_calls`
// (chat) or `text` (completions). The first output chunk sets TTFT; each later one adds a gap to
// ITL. A `usage` object (stream_options.include_usage) gives the token counts; without it the
// output length is the number of output chunks. An `error` object, invalid JSON, a stream that
// ends before `data: [DONE]`, or one with no output chunk fail the request.
#pragma once

#include <optional>
#include <string_view>

#include "apps/bench/request_record.h"

namespace dss::bench {

class StreamTimeline {
 public:
  // `start_time`: when the request was sent. `planned_prompt_len`: used when there is no usage.
  StreamTimeline(double start_time, int64_t planned_prompt_len);

  void on_event(double t, std::string_view data);
  // Transport failure (connection, HTTP status): the request fails with `error`.
  void fail(std::string error);
  bool done() const { return done_; }
  // The record; call once, after the stream ended (or failed).
  RequestRecord finish();

 private:
  RequestRecord r_;
  double last_output_t_ = 0, last_event_t_ = 0;
  std::optional<int64_t> usage_prompt_, usage_completion_;
  bool done_ = false;
};

}  // namespace dss::bench
