// PreTokenizer: the `pre_tokenizer` section of tokenizer.json, as used by DeepSeek-V3/V3.1/V3.2.
//
// Supported shape: a Sequence of `Split` steps (Regex pattern, behavior "Isolated",
// invert false) optionally ending with `ByteLevel` (add_prefix_space false, use_regex false).
// Each Split runs on every piece produced by the steps before it; "Isolated" keeps both the
// matches and the text between them, so the pieces always tile the input exactly.
// ByteLevel only changes the alphabet (the text layer works on raw bytes), so it splits nothing.
// Anything else is rejected with an error at load time rather than tokenized differently.
//
// Regexes are compiled with PCRE2 (UTF, UCP, JIT). `\s`/`\S` are rewritten to the Unicode
// White_Space property that Hugging Face's regex engine uses (PCRE2's own `\s` also matches
// U+180E). Threading: immutable after load; `split` is safe to call concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/json.h"

namespace dss {

class PreTokenizer {
 public:
  using PieceFn = void (*)(void* ctx, std::string_view piece);

  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Builds from the JSON value of "pre_tokenizer" (may be null: one piece per input).
  static Result<PreTokenizer> from_json(const Json& j);
  // Builds from a list of Split regexes (Rust/Oniguruma syntax, as written in tokenizer.json).
  static Result<PreTokenizer> from_patterns(const std::vector<std::string>& patterns);

  // Calls fn(piece) for every piece of `text`, in order. `text` must be valid UTF-8.
  // Pieces are non-empty views into `text` and concatenate to it.
  void split(std::string_view text, PieceFn fn, void* ctx) const;
  template <typename F>
  void split(std::string_view text, F&& f) const {
    split(
        text, [](void* c, std::string_view p) { (*static_cast<F*>(c))(p); },
        static_cast<void*>(&f));
  }

  size_t n_steps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dss
