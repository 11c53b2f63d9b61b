// Tokenizer: DeepSeek's byte-level BPE tokenizer, loaded from tokenizer.json (+ the optional
// tokenizer_config.json beside it), producing the same ids as Hugging Face `tokenizers`.
//
// encode(): invalid UTF-8 input is first repaired (each ill-formed subsequence -> U+FFFD, the
// rule HF's callers apply when they build a Rust string), then added tokens are cut out
// (leftmost-longest, exact bytes), the rest is pre-tokenized (PreTokenizer) and BPE'd per piece.
// No BOS is added unless asked: chat templates write the BOS text themselves, so a rendered
// prompt must be encoded with add_bos = false (deepseek-reference.md §5.10).
// decode(): concatenates the raw bytes of the ids (added tokens as their UTF-8 text); the result
// may end inside a UTF-8 sequence. decode_text() applies HF's lossy rule to that.
// Threading: immutable after load; every method is const and safe to call concurrently.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "io/json.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/pre_tokenizer.h"

namespace dss {

struct EncodeOptions {
  bool add_bos = false;       // prepend bos_id(); off for rendered chat prompts
  bool parse_special = true;  // false: added-token text is encoded as plain text (user data)
};

class Tokenizer {
 public:
  // Loads DIR/tokenizer.json and, when present, DIR/tokenizer_config.json.
  static Result<Tokenizer> load_dir(const std::string& dir);
  // `config` may be null (no tokenizer_config.json): BOS/EOS then default to ids 0/1 when
  // those are added tokens, and add_bos_default() is false.
  static Result<Tokenizer> from_json(const Json& tokenizer, const Json* config);

  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& opts = {}) const;
  void encode_into(std::string_view text, const EncodeOptions& opts,
                   std::vector<TokenId>& out) const;

  // Raw bytes of the ids, in order. Unknown ids contribute nothing (as in HF). With
  // skip_special, ids whose added token is marked "special" contribute nothing.
  std::string decode(std::span<const TokenId> ids, bool skip_special = false) const;
  // decode() followed by lossy UTF-8 repair: equal to HF `tokenizer.decode(ids, skip_special)`.
  std::string decode_text(std::span<const TokenId> ids, bool skip_special = false) const;

  // Bytes of one id (empty for unknown ids).
  std::string_view piece(TokenId id) const;
  bool is_valid_id(TokenId id) const { return id >= 0 && id < n_ids() && has_piece_[id]; }
  bool is_special(TokenId id) const;  // added token with "special": true
  bool is_added(TokenId id) const { return added_.by_id(id) != nullptr; }
  // Id of an added token by its exact text, e.g. "<｜tool▁sep｜>".
  std::optional<TokenId> added_token_id(std::string_view content) const;
  const AddedTokens& added_tokens() const { return added_; }

  int32_t n_ids() const { return static_cast<int32_t>(pieces_.size()); }  // max id + 1
  TokenId bos_id() const { return bos_id_; }
  TokenId eos_id() const { return eos_id_; }
  bool add_bos_default() const { return add_bos_default_; }  // tokenizer_config add_bos_token
  const std::string& bos_text() const { return bos_text_; }
  const std::string& eos_text() const { return eos_text_; }
  const std::string& chat_template() const { return chat_template_; }  // "" if none

 private:
  void encode_plain(std::string_view text, std::vector<TokenId>& out) const;

  PreTokenizer pre_;
  BpeModel bpe_;
  AddedTokens added_;
  std::vector<std::string> pieces_;  // [n_ids] bytes each id decodes to
  std::vector<bool> has_piece_;      // [n_ids]
  TokenId bos_id_ = -1, eos_id_ = -1;
  std::string bos_text_, eos_text_;
  bool add_bos_default_ = false;
  std::string chat_template_;
};

}  // namespace dss
