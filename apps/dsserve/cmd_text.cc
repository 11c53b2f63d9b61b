// Text subcommands for scripting and debugging the text layer (docs/text.md):
//   dsserve tokenize --tokenizer DIR [--jsonl] [--decode] [--add-bos] [--skip-special]
//   dsserve render-chat --tokenizer DIR [--format v3|v31|v32] [--ids] [--no-tool-prompt]
// Input comes from stdin. Bad input prints one line naming the problem and exits with 2.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/dsserve/commands.h"
#include "io/json.h"
#include "text/chat_template.h"
#include "text/token_ids_json.h"
#include "text/tokenizer.h"

namespace dss::app {
namespace {

struct TokenizeArgs {
  std::string tokenizer;
  bool jsonl = false, decode = false, add_bos = false, skip_special = false;
  bool no_parse_special = false;
};

struct RenderArgs {
  std::string tokenizer, format;
  bool ids = false, no_tool_prompt = false;
};

void fail(const char* cmd, const std::string& msg) {
  std::fprintf(stderr, "dsserve %s: %s\n", cmd, msg.c_str());
  exit_code = 2;
}

std::string read_stdin() {
  std::ios::sync_with_stdio(false);
  return std::string(std::istreambuf_iterator<char>(std::cin), {});
}

void write_out(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

void run_tokenize(const TokenizeArgs& a) {
  Result<Tokenizer> tok = Tokenizer::load_dir(a.tokenizer);
  if (!tok) return fail("tokenize", tok.message());
  const EncodeOptions opts{.add_bos = a.add_bos, .parse_special = !a.no_parse_special};
  if (!a.jsonl) {
    std::string in = read_stdin();
    if (a.decode) {
      Result<std::vector<TokenId>> ids = token_ids_from_json(*tok, in, "stdin");
      if (!ids) return fail("tokenize", ids.message());
      write_out(tok->decode_text(*ids, a.skip_special));
    } else {
      write_out(Json(tok->encode(in, opts)).dump() + "\n");
    }
    return;
  }
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    std::string where = "stdin line " + std::to_string(n);
    if (a.decode) {
      Result<std::vector<TokenId>> ids = token_ids_from_json(*tok, line, where);
      if (!ids) return fail("tokenize", ids.message());
      write_out(Json(tok->decode_text(*ids, a.skip_special)).dump() + "\n");
    } else {
      Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_string()) {
        return fail("tokenize", where + ": expected a JSON string");
      }
      write_out(Json(tok->encode(j.get<std::string>(), opts)).dump() + "\n");
    }
  }
}

void run_render(const RenderArgs& a) {
  Result<Tokenizer> tok = Tokenizer::load_dir(a.tokenizer);
  if (!tok) return fail("render-chat", tok.message());
  ChatFormat format;
  if (!a.format.empty()) {
    std::optional<ChatFormat> f = parse_chat_format(a.format);
    if (!f) return fail("render-chat", "--format: '" + a.format + "' is not v3, v31 or v32");
    format = *f;
  } else {
    std::optional<Json> cfg;
    std::string cfg_path = a.tokenizer + "/config.json";
    if (std::filesystem::exists(cfg_path)) {
      Result<Json> c = load_json_file(cfg_path);
      if (!c) return fail("render-chat", c.message());
      cfg = *c;
    }
    format = detect_chat_format(tok->chat_template(), cfg ? &*cfg : nullptr);
  }
  Result<OrderedJson> j = parse_json_bounded(read_stdin(), "stdin");
  if (!j) return fail("render-chat", j.message());
  Result<ChatRequest> req = parse_chat_request(*j);
  if (!req) return fail("render-chat", req.message());
  Result<std::string> prompt = render_chat(format, *req, {.inject_tool_prompt = !a.no_tool_prompt});
  if (!prompt) return fail("render-chat", prompt.message());
  if (a.ids) {
    // The prompt carries its own BOS text: never add another.
    write_out(Json(tok->encode(*prompt, {.add_bos = false})).dump() + "\n");
  } else {
    write_out(*prompt);
  }
}

}  // namespace

void register_text_commands(CLI::App& app) {
  auto* ta = &command_options<TokenizeArgs>();
  auto* tok = app.add_subcommand("tokenize", "Text on stdin -> JSON list of token ids (or back)");
  tok->add_option("--tokenizer", ta->tokenizer, "Directory with tokenizer.json")->required();
  tok->add_flag("--jsonl", ta->jsonl,
                "Each stdin line is a JSON string; print one id list per line");
  tok->add_flag("--decode", ta->decode, "Input is JSON id lists; print the text");
  tok->add_flag("--add-bos", ta->add_bos, "Prepend the BOS id (off: chat prompts carry their own)");
  tok->add_flag("--skip-special", ta->skip_special, "With --decode: drop special tokens");
  tok->add_flag("--no-parse-special", ta->no_parse_special,
                "Encode special-token text as plain text");
  tok->callback([ta] { run_tokenize(*ta); });

  auto* ra = &command_options<RenderArgs>();
  auto* rc = app.add_subcommand("render-chat",
                                "OpenAI chat request JSON on stdin -> the exact prompt text");
  rc->add_option("--tokenizer", ra->tokenizer, "Directory with tokenizer.json")->required();
  rc->add_option("--format", ra->format, "v3 | v31 | v32 (default: detected from the tokenizer)");
  rc->add_flag("--ids", ra->ids, "Print the prompt's token ids instead of its text");
  rc->add_flag("--no-tool-prompt", ra->no_tool_prompt,
               "V3.1: do not add the model-card tool description for `tools`");
  rc->callback([ra] { run_render(*ra); });
}

}  // namespace dss::app
