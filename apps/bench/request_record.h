// RequestRecord: what the client observed for one benchmark request (plain data, no behaviour).
//
// Times are seconds on the client's monotonic clock (base/clock.h). `ttft` and `itl` follow
// vLLM's `bench serve`: TTFT = first output chunk (content, reasoning or tool calls) - send time;
// `itl` holds the gaps between consecutive output chunks (a chunk may carry several tokens);
// `latency` (E2E) = last data event before `[DONE]` - send time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dss::bench {

struct RequestRecord {
  bool success = false;
  std::string error;            // why it failed ("" when success)
  int64_t prompt_len = 0;       // input tokens (server usage when reported, else planned)
  int64_t output_tokens = 0;    // server usage completion_tokens, else number of output chunks
  double start_time = 0;        // send time (s, monotonic)
  double ttft = 0;              // s
  std::vector<double> itl;      // [n_output_chunks - 1] s
  double latency = 0;           // s, E2E
  int64_t n_output_chunks = 0;  // chunks that carried output on any channel
  std::string generated_text;   // content + reasoning text, concatenated
};

}  // namespace dss::bench
