#include "server/server.h"

#include <filesystem>
#include <utility>

namespace dss {

Result<RoutesConfig> routes_config_from(const ServerOptions& opts, const std::string& model_dir,
                                        const Json& model_config, const Tokenizer* tok) {
  namespace fs = std::filesystem;
  RoutesConfig rc;
  rc.served_model_name = opts.served_model_name;
  if (rc.served_model_name.empty())
    rc.served_model_name = fs::path(model_dir).lexically_normal().filename().string();
  if (rc.served_model_name.empty())
    rc.served_model_name = fs::path(model_dir).parent_path().filename();
  rc.chat_format = detect_chat_format(tok ? tok->chat_template() : "", &model_config);
  const std::string& tp = opts.tool_call_parser;
  if (tp == "none") {
    rc.tool_format.reset();
  } else if (tp.empty()) {
    rc.tool_format = rc.chat_format;
  } else if (auto f = parse_chat_format(tp)) {
    rc.tool_format = *f;
  } else {
    return Status::error("--tool-call-parser: '", tp, "' is not one of v3, v31, v32, none");
  }
  const std::string& rp = opts.reasoning_parser;
  if (rp == "none") {
    rc.parse_reasoning = false;
  } else if (rp.empty() || rp == "deepseek" || rp == "deepseek_r1" || rp == "deepseek_v3") {
    rc.parse_reasoning = true;
  } else {
    return Status::error("--reasoning-parser: '", rp, "' is not one of deepseek, none");
  }
  rc.api_key = opts.api_key;
  rc.max_queued_requests = opts.max_queued_requests;
  return rc;
}

Result<std::unique_ptr<Server>> Server::create(const ServerOptions& opts, RoutesConfig routes,
                                               EngineApi& engine, const Tokenizer* tok) {
  std::unique_ptr<Server> s(new Server());
  s->routes_ = std::make_unique<OpenAiRoutes>(engine, tok, s->metrics_, std::move(routes));
  OpenAiRoutes* r = s->routes_.get();
  HttpServerHooks hooks;
  hooks.handle = [r](HttpRequest&& req, std::shared_ptr<HttpExchange> ex) {
    r->handle(std::move(req), std::move(ex));
  };
  hooks.in_flight = [r] { return r->in_flight(); };
  hooks.cancel_all = [r] { r->cancel_all(); };
  // A parallel job: a signal from the launcher is mpirun ending the job (another rank died, or
  // mpirun itself was signalled), so a stalled step is then a fault at once
  // (engine/step_watchdog.h), answered before mpirun's SIGKILL. An operator's signal to rank 0
  // drains gracefully.
  hooks.on_shutdown = [&engine](bool by_launcher) {
    if (by_launcher) engine.expect_shutdown();
  };
  engine.set_on_stall([r](const std::string& why) { r->fail_all(why); });
  DSS_ASSIGN_OR_RETURN(s->http_, HttpServer::create(opts, std::move(hooks)));
  HttpServer* http = s->http_.get();
  r->set_draining([http] { return http->shutting_down(); });
  return s;
}

Server::~Server() = default;

}  // namespace dss
