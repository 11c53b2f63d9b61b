// Server: the HTTP front end of `dsserve serve` assembled over one EngineApi (an Engine, or the
// data-parallel front over several: engine/dp_front.h): the routes' settings from the flags and the
// model (routes_config_from), the Prometheus metrics, the OpenAI routes and the HTTP transport,
// with the transport's hooks (handle, in_flight, cancel_all) and the routes' draining check (503
// while shutting down) wired between them.
//
// Ownership: owns the metrics, routes and transport; the engine and the tokenizer are the
// caller's and must outlive the Server. Teardown order: run() returns after the graceful
// shutdown (http_server.h); the caller then shuts the engine down (its sinks post to stopped
// strands) and destroys the Server, which drops the routes before the transport.
// Threading: create() and run() on one thread; run() serves until SIGINT/SIGTERM.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "engine/engine_api.h"
#include "io/json.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_routes.h"
#include "server/server_options.h"
#include "text/tokenizer.h"

namespace dss {

// The routes' settings of `opts` for the model in model_dir (config.json's contents in
// model_config; `tok` may be null):
//   served_model_name: --served-model-name, else the directory's name;
//   chat_format: from the tokenizer's chat template, else config.json (detect_chat_format);
//   tool_format: --tool-call-parser v3|v31|v32, "none" (off) or "" (the chat format);
//   parse_reasoning: --reasoning-parser deepseek|deepseek_r1|deepseek_v3|"" (on) or none (off);
//   api_key, max_queued_requests: as given.
// Errors (an unknown parser name) name the flag: input errors, reported before the engine loads.
Result<RoutesConfig> routes_config_from(const ServerOptions& opts, const std::string& model_dir,
                                        const Json& model_config, const Tokenizer* tok);

class Server {
 public:
  // Binds and listens on opts.host:opts.port (errors: address in use, bad host).
  static Result<std::unique_ptr<Server>> create(const ServerOptions& opts, RoutesConfig routes,
                                                EngineApi& engine, const Tokenizer* tok);
  ~Server();

  const RoutesConfig& routes_config() const { return routes_->config(); }
  uint16_t port() const { return http_->port(); }
  // Serves on opts.n_io_threads threads (this one included) until the shutdown completes.
  void run() { http_->run(); }

 private:
  Server() = default;

  Metrics metrics_;  // declared first: outlives the routes that record into it
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<OpenAiRoutes> routes_;  // destroyed before the transport
};

}  // namespace dss
