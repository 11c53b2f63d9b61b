// IncrementalDetokenizer: token ids in, text out, one id at a time, emitting only complete UTF-8.
//
// A token may end inside a multi-byte character (byte-level BPE splits emoji and CJK across
// tokens); those bytes are held until the character completes. Bytes that can never become
// valid are emitted as U+FFFD right away, so the stream never stalls. Special tokens
// (added tokens marked "special", e.g. `<｜end▁of▁sentence｜>`) are emitted as their text by
// default, because the output parsers need them; with skip_special they are dropped.
// Control tokens that are not "special" (`<｜tool▁calls▁begin｜>`, `<｜User｜>`) are always text.
// Invariant: concat(push(ids)...) + finish() == tokenizer.decode_text(ids, skip_special).
// Threading: one instance per stream; the Tokenizer must outlive it.
#pragma once

#include <string>

#include "core/types.h"
#include "text/tokenizer.h"

namespace dss {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tok, bool skip_special = false)
      : tok_(&tok), skip_special_(skip_special) {}

  // Text that became complete with `id` (may be empty).
  std::string push(TokenId id);
  // Flushes a trailing incomplete character as U+FFFD; the detokenizer can then be reused.
  std::string finish();
  // Bytes held back waiting for the rest of a character (0..3).
  size_t n_pending() const { return pending_.size(); }

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace dss
