// ServerOptions: how `dsserve serve` listens, limits and names things (flag names in comments).
// Plain data, filled by apps/dsserve/cmd_serve.cc, read by HttpServer and OpenAiRoutes.
#pragma once

#include <cstdint>
#include <string>

namespace dss {

struct ServerOptions {
  std::string host = "127.0.0.1";       // --host
  uint16_t port = 8000;                 // --port (0: any free port, printed at start-up)
  std::string api_key;                  // --api-key: empty = no authentication
  int64_t max_request_bytes = 1 << 20;  // --max-request-bytes: larger bodies get 413
  int32_t max_queued_requests = 1024;   // --max-queued-requests: waiting beyond this gets 429
  double shutdown_timeout_s = 10.0;     // --shutdown-timeout: then in-flight requests are cancelled
  double header_timeout_s = 30.0;  // --header-timeout: request line + headers (and keep-alive idle)
  double body_timeout_s = 30.0;    // --body-timeout: the request body after its headers
  int32_t n_io_threads = 2;        // --io-threads
  std::string served_model_name;   // --served-model-name (default: the model directory's name)
  std::string tool_call_parser;    // --tool-call-parser v3|v31|v32|none ("" = from the model)
  std::string reasoning_parser;    // --reasoning-parser deepseek|none ("" = deepseek)
  bool skip_tokenizer_init = false;  // --skip-tokenizer-init: token-id prompts only
};

}  // namespace dss
