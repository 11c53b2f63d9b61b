#include "text/tokenizer.h"

#include <filesystem>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace dss {
namespace {

// tokenizer_config.json writes tokens either as a string or as {"content": ...}.
std::string token_text(const Json& cfg, const char* key) {
  if (!cfg.contains(key)) return "";
  const Json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return "";
}

Result<std::vector<AddedToken>> parse_added_tokens(const Json& tok) {
  std::vector<AddedToken> added;
  if (!tok.contains("added_tokens")) return added;
  for (const Json& a : tok["added_tokens"]) {
    if (!a.contains("id") || !a.contains("content")) {
      return Status::error("added_tokens: entry without id/content");
    }
    if (a.value("lstrip", false) || a.value("rstrip", false) || a.value("single_word", false)) {
      return Status::error("added_tokens: lstrip/rstrip/single_word are not supported (",
                           a["content"].get<std::string>(), ")");
    }
    AddedToken at{a["id"].get<TokenId>(), a["content"].get<std::string>(),
                  a.value("special", false)};
    if (at.id < 0) return Status::error("added_tokens: negative id");
    added.push_back(std::move(at));
  }
  return added;
}

}  // namespace

Result<Tokenizer> Tokenizer::load_dir(const std::string& dir) {
  std::string tok_path = dir + "/tokenizer.json";
  DSS_ASSIGN_OR_RETURN(Json tok, load_json_file(tok_path));
  std::string cfg_path = dir + "/tokenizer_config.json";
  std::optional<Json> cfg;
  if (std::filesystem::exists(cfg_path)) {
    DSS_ASSIGN_OR_RETURN(Json c, load_json_file(cfg_path));
    cfg = std::move(c);
  }
  Result<Tokenizer> t = from_json(tok, cfg ? &*cfg : nullptr);
  if (!t) return t.status().with_context(tok_path + ": ");
  return t;
}

Result<Tokenizer> Tokenizer::from_json(const Json& tok, const Json* cfg) {
  if (!tok.is_object() || !tok.contains("model")) return Status::error("no \"model\" section");
  Tokenizer t;
  const Json& norm = tok.contains("normalizer") ? tok["normalizer"] : Json();
  bool identity_norm =
      norm.is_null() || (norm.value("type", "") == "Sequence" && norm.contains("normalizers") &&
                         norm["normalizers"].empty());
  if (!identity_norm) return Status::error("normalizer: only none/empty Sequence is supported");
  DSS_ASSIGN_OR_RETURN(t.pre_, PreTokenizer::from_json(
                                   tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : Json()));
  DSS_ASSIGN_OR_RETURN(t.bpe_, BpeModel::from_json(tok["model"]));

  int32_t n = t.bpe_.n_ids();
  DSS_ASSIGN_OR_RETURN(std::vector<AddedToken> added, parse_added_tokens(tok));
  for (const AddedToken& a : added) n = std::max(n, a.id + 1);
  t.pieces_.assign(n, std::string());
  t.has_piece_.assign(n, false);
  for (TokenId id = 0; id < t.bpe_.n_ids(); ++id) {
    t.pieces_[id] = std::string(t.bpe_.id_bytes(id));
    t.has_piece_[id] = !t.pieces_[id].empty();
  }
  for (AddedToken& a : added) {
    // HF's ByteLevel decoder maps a token through the byte alphabet when every character is
    // in it, and uses the token's own UTF-8 otherwise.
    std::optional<std::string> bytes = byte_level_decode(a.content);
    t.pieces_[a.id] = bytes ? *bytes : a.content;
    t.has_piece_[a.id] = true;
    t.added_.add(std::move(a));
  }

  if (cfg != nullptr) {
    t.bos_text_ = token_text(*cfg, "bos_token");
    t.eos_text_ = token_text(*cfg, "eos_token");
    t.add_bos_default_ = cfg->value("add_bos_token", false);
    if (cfg->contains("chat_template") && (*cfg)["chat_template"].is_string()) {
      t.chat_template_ = (*cfg)["chat_template"].get<std::string>();
    }
  }
  auto resolve = [&](std::string& text, TokenId fallback) -> TokenId {
    if (!text.empty()) {
      if (const AddedToken* a = t.added_.by_content(text)) return a->id;
      TokenId v = t.bpe_.find(text);
      return v;
    }
    if (const AddedToken* a = t.added_.by_id(fallback)) {
      text = a->content;
      return fallback;
    }
    return -1;
  };
  t.bos_id_ = resolve(t.bos_text_, 0);
  t.eos_id_ = resolve(t.eos_text_, 1);
  if (t.add_bos_default_ && t.bos_id_ < 0) return Status::error("add_bos_token without a bos id");
  return t;
}

void Tokenizer::encode_plain(std::string_view text, std::vector<TokenId>& out) const {
  pre_.split(text, [&](std::string_view piece) { bpe_.encode_piece(piece, out); });
}

void Tokenizer::encode_into(std::string_view text, const EncodeOptions& opts,
                            std::vector<TokenId>& out) const {
  std::string repaired;
  if (!utf8_is_valid(text)) {
    repaired = utf8_lossy(text);
    text = repaired;
  }
  if (opts.add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  size_t pos = 0;
  if (opts.parse_special) {
    TokenId id;
    size_t len;
    for (size_t at; (at = added_.find(text, pos, id, len)) != std::string_view::npos;) {
      if (at > pos) encode_plain(text.substr(pos, at - pos), out);
      out.push_back(id);
      pos = at + len;
    }
  }
  if (pos < text.size()) encode_plain(text.substr(pos), out);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& opts) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  encode_into(text, opts, out);
  return out;
}

std::string_view Tokenizer::piece(TokenId id) const {
  if (id < 0 || id >= n_ids()) return {};
  return pieces_[id];
}

bool Tokenizer::is_special(TokenId id) const {
  const AddedToken* a = added_.by_id(id);
  return a != nullptr && a->special;
}

std::optional<TokenId> Tokenizer::added_token_id(std::string_view content) const {
  const AddedToken* a = added_.by_content(content);
  if (a == nullptr) return std::nullopt;
  return a->id;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special) const {
  std::string out;
  for (TokenId id : ids) {
    if (skip_special && is_special(id)) continue;
    out.append(piece(id));
  }
  return out;
}

std::string Tokenizer::decode_text(std::span<const TokenId> ids, bool skip_special) const {
  return utf8_lossy(decode(ids, skip_special));
}

}  // namespace dss
