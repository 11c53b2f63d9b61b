// Runner: sends planned requests to an OpenAI-compatible server as streams and records what the
// client sees (one RequestRecord per request, in plan order).
//
// Arrivals: request i is released at `arrivals[i]` seconds after the run starts; at most
// `max_concurrency` requests are in flight (0 = no limit), the rest wait in arrival order (vLLM's
// semaphore). `start_time` of a record is when it was sent, after any such wait.
// Every request streams with `stream_options.include_usage`, temperature 0, `max_tokens` from
// the plan and `ignore_eos` when asked. Completions send the prompt as token ids; chat sends the
// text as one user message.
// Threading: blocking; runs its own single-threaded io_context.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apps/bench/dataset.h"
#include "apps/bench/http_client.h"
#include "apps/bench/request_record.h"

namespace dss::bench {

enum class ApiEndpoint { kChat, kCompletions };

struct RunOptions {
  ServerUrl url;
  std::string model;  // the request's "model"
  ApiEndpoint endpoint = ApiEndpoint::kChat;
  bool ignore_eos = false;
  int32_t max_concurrency = 0;       // 0: unlimited
  double idle_timeout_s = 6 * 3600;  // longest silence of one stream
  bool progress = false;             // draw a progress bar (stderr TTY only)
  std::string label = "bench";       // progress bar label
};

struct RunResult {
  std::vector<RequestRecord> records;  // [n_requests], plan order
  double duration_s = 0;               // first release to last completion
};

// The JSON body of one request.
std::string request_body(const RunOptions& o, const PlannedRequest& r);

Result<RunResult> run_requests(const RunOptions& o, std::span<const PlannedRequest> plan,
                               std::span<const double> arrivals);

}  // namespace dss::bench
