// `dsserve serve`: the OpenAI-compatible HTTP server (src/server) over the batching engine.
// With no --model, the default demo model (models/demo-tiny-v32 under the current directory: a
// DeepSeek-V3.2 architecture with random weights + the real tokenizer, V3.2 chat format) is
// created on first use, exactly as `dsserve init-model --preset tiny-v32 --out
// models/demo-tiny-v32 --seed 7` would, and served. Exits 0 after SIGINT/SIGTERM.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/init_model.h"
#include "engine/engine.h"
#include "io/json.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_routes.h"
#include "server/server_options.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace dss::app {

namespace {

constexpr const char* kDefaultModel = "models/demo-tiny-v32";  // [DEMO_MODEL] Makefile
constexpr const char* kDefaultPreset = "tiny-v32";

struct ServeArgs {
  EngineOptions engine;
  ServerOptions server;
};

int fail(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "dsserve serve: %s\n", msg.c_str());
  return code;
}

int run_serve(ServeArgs& a) {
  namespace fs = std::filesystem;
  if (a.engine.model_dir.empty()) {
    a.engine.model_dir = kDefaultModel;
    if (!fs::exists(fs::path(kDefaultModel) / "config.json")) {
      std::fprintf(stderr, "dsserve serve: creating the demo model in %s (random weights)\n",
                   kDefaultModel);
      InitModelOptions im;
      im.preset = kDefaultPreset;
      im.out = kDefaultModel;
      im.seed = 7;
      if (Status s = init_model(im); !s) return fail("creating the demo model: " + s.message());
    }
  }
  const std::string& dir = a.engine.model_dir;
  auto config = load_json_file(dir + "/config.json");
  if (!config) return fail(config.message());

  std::optional<Tokenizer> tok;
  if (!a.server.skip_tokenizer_init) {
    if (!fs::exists(fs::path(dir) / "tokenizer.json"))
      return fail(dir +
                      " has no tokenizer.json: add one, or serve token ids only with "
                      "--skip-tokenizer-init",
                  2);
    auto t = Tokenizer::load_dir(dir);
    if (!t) return fail(t.message());
    tok = std::move(*t);
  }

  RoutesConfig rc;
  rc.served_model_name = a.server.served_model_name;
  if (rc.served_model_name.empty())
    rc.served_model_name = fs::path(dir).lexically_normal().filename().string();
  if (rc.served_model_name.empty()) rc.served_model_name = fs::path(dir).parent_path().filename();
  rc.chat_format = detect_chat_format(tok ? tok->chat_template() : "", &*config);
  const std::string& tp = a.server.tool_call_parser;
  if (tp == "none") {
    rc.tool_format.reset();
  } else if (tp.empty()) {
    rc.tool_format = rc.chat_format;
  } else if (auto f = parse_chat_format(tp)) {
    rc.tool_format = *f;
  } else {
    return fail("--tool-call-parser: '" + tp + "' is not one of v3, v31, v32, none", 2);
  }
  const std::string& rp = a.server.reasoning_parser;
  if (rp == "none") {
    rc.parse_reasoning = false;
  } else if (rp.empty() || rp == "deepseek" || rp == "deepseek_r1" || rp == "deepseek_v3") {
    rc.parse_reasoning = true;
  } else {
    return fail("--reasoning-parser: '" + rp + "' is not one of deepseek, none", 2);
  }
  rc.api_key = a.server.api_key;
  rc.max_queued_requests = a.server.max_queued_requests;

  auto engine = Engine::create(a.engine);
  if (!engine) return fail(engine.message());
  Metrics metrics;
  auto routes = std::make_unique<OpenAiRoutes>(**engine, tok ? &*tok : nullptr, metrics, rc);
  HttpServerHooks hooks;
  OpenAiRoutes* r = routes.get();
  hooks.handle = [r](HttpRequest&& req, std::shared_ptr<HttpExchange> ex) {
    r->handle(std::move(req), std::move(ex));
  };
  hooks.in_flight = [r] { return r->in_flight(); };
  hooks.cancel_all = [r] { r->cancel_all(); };
  auto server = HttpServer::create(a.server, std::move(hooks));
  if (!server) return fail(server.message());
  HttpServer* srv = server->get();
  routes->set_draining([srv] { return srv->shutting_down(); });

  std::printf("dsserve: serving %s (%s format, tool parser %s) on http://%s:%u\n",
              rc.served_model_name.c_str(), chat_format_name(rc.chat_format),
              rc.tool_format ? chat_format_name(*rc.tool_format) : "none", a.server.host.c_str(),
              static_cast<unsigned>(srv->port()));
  std::fflush(stdout);
  srv->run();
  (*engine)->shutdown();  // aborts anything left; sinks post to a stopped loop (dropped below)
  routes.reset();
  server->reset();
  std::fprintf(stderr, "dsserve serve: stopped\n");
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app) {
  auto* a = &command_options<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API");
  add_engine_flags(cmd, a->engine, /*model_required=*/false);
  ServerOptions& s = a->server;
  cmd->add_option("--host", s.host, "Listen address (IP)")->capture_default_str();
  cmd->add_option("--port", s.port, "Listen port (0: any free port)")->capture_default_str();
  cmd->add_option("--api-key", s.api_key,
                  "Require `Authorization: Bearer KEY` on /v1/* (default: no key)");
  cmd->add_option("--max-request-bytes", s.max_request_bytes,
                  "Largest request body accepted (else 413)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-queued-requests", s.max_queued_requests,
                  "Engine requests allowed to wait for a batch slot (else 429; 0 = unlimited)")
      ->capture_default_str();
  cmd->add_option("--shutdown-timeout", s.shutdown_timeout_s,
                  "Seconds to let in-flight requests finish after SIGINT/SIGTERM, then cancel")
      ->capture_default_str();
  cmd->add_option("--header-timeout", s.header_timeout_s,
                  "Seconds to receive request headers (also the keep-alive idle limit)")
      ->capture_default_str();
  cmd->add_option("--body-timeout", s.body_timeout_s, "Seconds to receive a request body")
      ->capture_default_str();
  cmd->add_option("--io-threads", s.n_io_threads, "HTTP io threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--served-model-name", s.served_model_name,
                  "Model id in /v1/models and responses (default: the model directory's name)");
  cmd->add_option("--tool-call-parser", s.tool_call_parser,
                  "Tool-call output format: v3, v31, v32 or none (default: the model's)");
  cmd->add_option("--reasoning-parser", s.reasoning_parser,
                  "deepseek (split <think>...</think> into reasoning_content, default) or none");
  cmd->add_flag("--skip-tokenizer-init", s.skip_tokenizer_init,
                "Do not load a tokenizer: /v1/completions with token-id prompts only");
  cmd->callback([a] { exit_code = run_serve(*a); });
}

}  // namespace dss::app
