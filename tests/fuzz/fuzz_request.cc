// Fuzz target: the server's whole request path short of the engine. Raw HTTP bytes go through
// the server's own parser configuration (server/http_request_parser.h); a complete POST to a
// generation route, or a JSON body given directly, goes through prepare_request
// (server/request_prep.h): bounded JSON parse, schemas, chat rendering in every format, tokenizer,
// context and sampling checks, and the structured-output and forced-tool-call grammars compiled
// against the real vocabulary (tool calls parsed in the chat format's own format).
// Input: byte 0 'H': the rest is raw HTTP (fed in two pieces split at byte 1's position).
//        otherwise: byte 0 % 3 picks the chat format (V3, V3.1, V3.2), (byte 0 / 3) % 2 the
//        endpoint (chat, completions); the rest is the body. Seeds use '0'-'2' (chat) and '3'-'5'
//        (completions).
// Properties: no crash, no sanitizer report; an accepted request has non-empty prompts of valid
// token ids that fit the context with max_tokens; a refused one has a 400/404 with a message.
// Needs the real tokenizer: $DSS_TOKENIZER_DIR or third_party/tokenizer/deepseek-v3.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/http_request_parser.h"
#include "server/request_prep.h"
#include "server/tool_call_grammar.h"

#include "tests/fuzz/fuzz_tokenizer_dir.h"

namespace {

const dss::Tokenizer& tokenizer() { return fuzz_tokenizer("fuzz_request"); }

dss::grammar::GrammarCompiler& grammars() {
  static dss::grammar::GrammarCompiler* c = new dss::grammar::GrammarCompiler(
      dss::grammar::TokenVocab::from_tokenizer(tokenizer(), 0, dss::tool_call_control_tokens()));
  return *c;
}

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_request: property violated: %s\n", what);
    std::abort();
  }
}

void prepare(dss::Endpoint endpoint, dss::ChatFormat format, std::string_view body) {
  dss::PromptContext ctx;
  ctx.tok = &tokenizer();
  ctx.chat_format = format;
  ctx.context_length = 4096;
  ctx.n_vocab = tokenizer().n_ids();
  ctx.served_model_name = "demo";
  ctx.grammars = &grammars();
  ctx.tool_format = format;
  dss::PreparedRequest p;
  if (auto e = dss::prepare_request(endpoint, body, ctx, p)) {
    require(e->status == 400 || e->status == 404, "refusal is a 400 or 404");
    require(!e->message.empty(), "refusal has a message");
    return;
  }
  require(!p.prompts.empty(), "accepted request has a prompt");
  for (const auto& prompt : p.prompts) {
    require(!prompt.empty(), "prompt has tokens");
    require(static_cast<int64_t>(prompt.size()) + p.req.params.max_tokens <= ctx.context_length,
            "prompt + max_tokens fits the context");
    for (const dss::TokenId t : prompt) require(t >= 0 && t < ctx.n_vocab, "token id in range");
  }
}

void http(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  dss::ServerOptions opts;
  opts.max_request_bytes = 64 * 1024;
  dss::HttpRequestParser parser;
  dss::limit_request_parser(parser, opts);
  parser.eager(true);
  const size_t split = size > 1 ? data[1] % size : 0;
  boost::beast::error_code ec;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size > 0 ? size - 1 : 0);
  // Feed as a socket would: in pieces, each put() consuming what it can.
  for (std::string_view piece :
       {rest.substr(0, split), rest.substr(std::min(split, rest.size()))}) {
    std::string buffered(piece);
    while (!buffered.empty() && !parser.is_done()) {
      const size_t used = parser.put(boost::asio::buffer(buffered), ec);
      if (ec == http::error::need_more) {
        ec = {};
        break;
      }
      if (ec) return;  // the server answers 400/413/431 and closes
      buffered.erase(0, used);
      if (used == 0) break;
    }
  }
  if (!parser.is_done()) return;
  dss::HttpRequest req = dss::to_http_request(parser.release());
  if (req.method != "POST") return;
  if (req.path == "/v1/chat/completions")
    prepare(dss::Endpoint::kChat, dss::ChatFormat::kV32, req.body);
  else if (req.path == "/v1/completions")
    prepare(dss::Endpoint::kCompletions, dss::ChatFormat::kV32, req.body);
}

}  // namespace

// libFuzzer calls this once before any input: the tokenizer and the grammar vocabulary are built
// here, outside the 1 s per-input limit (the replay driver builds them lazily instead).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  grammars();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 'H') {
    http(data, size);
    return 0;
  }
  const dss::ChatFormat formats[] = {dss::ChatFormat::kV3, dss::ChatFormat::kV31,
                                     dss::ChatFormat::kV32};
  const dss::Endpoint endpoint =
      (data[0] / 3) % 2 == 0 ? dss::Endpoint::kChat : dss::Endpoint::kCompletions;
  prepare(endpoint, formats[data[0] % 3],
          std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  return 0;
}
