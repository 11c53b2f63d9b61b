// `dsserve serve`: the OpenAI-compatible HTTP server (src/server) over the batching engine.
// With no --model, the default demo model (models/demo-tiny-v32 under the current directory: a
// DeepSeek-V3.2 architecture with random weights + the real tokenizer, V3.2 chat format) is
// created on first use, exactly as `dsserve init-model --preset tiny-v32 --out
// models/demo-tiny-v32 --seed 7` would, and served. Exits 0 after SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "apps/dsserve/commands.h"
#include "apps/dsserve/engine_flags.h"
#include "apps/dsserve/init_model.h"
#include "apps/dsserve/parallel_flags.h"
#include "dist/mpi_mailbox.h"
#include "engine/dp_front.h"
#include "engine/dp_replica.h"
#include "engine/engine.h"
#include "io/json.h"
#include "server/server.h"
#include "server/server_options.h"
#include "server/tool_call_grammar.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace dss::app {

namespace {

constexpr const char* kDefaultModel = "models/demo-tiny-v32";  // [DEMO_MODEL] Makefile
constexpr const char* kDefaultPreset = "tiny-v32";

struct ServeArgs {
  EngineOptions engine;
  ServerOptions server;
  ParallelArgs parallel;
};

int fail(const std::string& msg, int code = 1) {
  std::fprintf(stderr, "dsserve serve: %s\n", msg.c_str());
  return code;
}

void announce(const ServeArgs& a, Server& server) {
  const RoutesConfig& rc = server.routes_config();
  std::printf("dsserve: serving %s (%s format, tool parser %s) on http://%s:%u\n",
              rc.served_model_name.c_str(), chat_format_name(rc.chat_format),
              rc.tool_format ? chat_format_name(*rc.tool_format) : "none", a.server.host.c_str(),
              static_cast<unsigned>(server.port()));
  std::fflush(stdout);
}

// Ranks other than 0 of a tensor-parallel group: the engine's follower (no HTTP, no tokenizer).
// SIGINT / SIGTERM are rank 0's to handle: its shutdown stops this rank's steps.
int run_follower(ServeArgs& a, ParallelRun& par) {
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  auto engine = Engine::create(a.engine, par.tp_group(), par.dp_attention_group());
  if (!engine) return fail(engine.message());
  (*engine)->follow();
  return 0;
}

// The leader of data-parallel replica r > 0: its engine, served to rank 0's front
// (engine/dp_replica.h) until the front stops it.
int run_replica_leader(ServeArgs& a, ParallelRun& par) {
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  // Collective over the leaders, before the engine thread may call MPI (DP attention).
  MpiMailbox mail(*par.leaders);
  auto engine = Engine::create(a.engine, par.tp_group(), par.dp_attention_group());
  if (!engine) return fail(engine.message());
  // Output grammars arrive lowered; they bind to the vocabulary the front compiles against.
  std::shared_ptr<const grammar::TokenVocab> vocab;
  const std::string& dir = a.engine.model_dir;
  if (!a.server.skip_tokenizer_init && std::filesystem::exists(dir + "/tokenizer.json")) {
    auto tok = Tokenizer::load_dir(dir);
    if (!tok) return fail(tok.message());
    vocab = grammar::TokenVocab::from_tokenizer(*tok, (*engine)->model_config().n_vocab,
                                                tool_call_control_tokens());
  }
  serve_replica(**engine, mail, std::move(vocab));
  return 0;
}

int run_other_rank(ServeArgs& a, ParallelRun& par) {
  return par.is_leader() ? run_replica_leader(a, par) : run_follower(a, par);
}

// Rank 0 with --dp-size > 1: the HTTP server over the data-parallel front. Exits 3 when a
// replica leader did not answer the stop (it is gone: MPI cannot finalise).
int serve_front(ServeArgs& a, ParallelRun& par, MpiMailbox& mail, Engine& engine,
                const Tokenizer* tok, RoutesConfig routes) {
  std::vector<int> leader_ranks;
  for (int32_t r = 0; r < par.dp_size; ++r) leader_ranks.push_back(par.leader_rank(r));
  DpRouterOptions ro;
  ro.n_replicas = par.dp_size;
  ro.block_tokens = a.engine.page_size;
  ro.min_match_tokens = a.engine.page_size;
  // Where the engine thread runs collectives it polls the mailbox too (one thread calls MPI).
  const DpDrive drive = engine.lockstep()            ? DpDrive::kLockstep
                        : engine.calls_collectives() ? DpDrive::kBetweenSteps
                                                     : DpDrive::kOwnThread;
  DpFront front(engine, mail, std::move(leader_ranks), ro, a.parallel.dist_timeout_s, drive);
  if (drive != DpDrive::kOwnThread) engine.set_round_hook([&front] { front.poll_once(); });
  Result<std::unique_ptr<Server>> server = Status::error("a replica leader did not start");
  if (front.wait_ready()) server = Server::create(a.server, std::move(routes), front, tok);
  if (server) {
    announce(a, **server);
    (*server)->run();
  }
  // Stopped together also when the server could not start: under DP attention the engines
  // leave their lockstep only all at once.
  front.request_stop();
  engine.shutdown();  // under DP attention it returns once every rank's engine has stopped
  const bool stopped = front.stop();
  if (server) server->reset();
  if (!stopped) std::_Exit(3);
  if (!server) return fail(server.message());
  std::fprintf(stderr, "dsserve serve: stopped\n");
  return 0;
}

int run_serve(ServeArgs& a) {
  namespace fs = std::filesystem;
  Result<ParallelRun> par = start_parallel(
      a.parallel, /*allow_replicas=*/true,
      a.parallel.dp_size > 1 ? MpiThreadLevel::kMultiple : MpiThreadLevel::kSerialized);
  if (!par) return fail(par.message(), 2);
  a.engine.expert_parallel = a.parallel.ep_size > 1;
  a.engine.dist_timeout_s = a.parallel.dist_timeout_s;
  if (a.engine.model_dir.empty() && par->rank() != 0) {
    a.engine.model_dir = kDefaultModel;
    par->world->barrier();  // rank 0 creates it
    return run_other_rank(a, *par);
  }
  if (par->rank() != 0) return run_other_rank(a, *par);
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
    if (par->world) par->world->barrier();  // the other ranks load it now
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

  const Tokenizer* tok_ptr = tok ? &*tok : nullptr;
  auto routes = routes_config_from(a.server, dir, *config, tok_ptr);
  if (!routes) return fail(routes.message(), 2);
  std::optional<MpiMailbox> mail;  // before the engine thread may call MPI (DP attention)
  if (par->dp_size > 1) mail.emplace(*par->leaders);
  auto engine = Engine::create(a.engine, par->tp_group(), par->dp_attention_group());
  if (!engine) return fail(engine.message());
  if (mail) return serve_front(a, *par, *mail, **engine, tok_ptr, std::move(*routes));
  auto server = Server::create(a.server, std::move(*routes), **engine, tok_ptr);
  if (!server) return fail(server.message());
  announce(a, **server);
  (*server)->run();
  (*engine)->shutdown();  // aborts anything left; sinks post to a stopped loop (dropped below)
  server->reset();
  std::fprintf(stderr, "dsserve serve: stopped\n");
  return 0;
}

}  // namespace

void register_serve_command(CLI::App& app) {
  auto* a = &command_options<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve the OpenAI-compatible HTTP API");
  add_engine_flags(cmd, a->engine, /*model_required=*/false);
  add_parallel_flags(cmd, a->parallel);
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
