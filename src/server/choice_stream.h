// ChoiceStream: one choice of one response, from sampled tokens to what the client sees.
//
// Pipeline per token: incremental detokenizer -> stop-string matcher -> (chat) ChatOutputParser
// into content / reasoning_content / tool-call events, or (completions) plain text. Each push
// returns the delta to send now; output() / text() are the fold of every delta so far. The
// streamed and the non-streamed response are both built from these deltas, so for the same
// tokens they carry identical text, tool calls and usage by construction.
//
// The final token of a request that stopped on EOS or a stop token id is counted but not shown
// (as OpenAI/vLLM). Once a stop string matched, stopped() is true, further tokens are ignored,
// and the caller cancels the engine request; n_tokens() counts up to the matching token.
// Without a tokenizer (--skip-tokenizer-init) only token ids and logprobs are produced.
// Threading: one instance per choice, used by one thread (or strand) at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/generate.h"
#include "text/chat_output_parser.h"
#include "text/detokenizer.h"
#include "text/stop_string_matcher.h"
#include "text/tokenizer.h"

namespace dss {

struct ChoiceStreamOptions {
  bool chat = true;  // false: completions (raw text, no output parsing)
  ChatFormat format = ChatFormat::kV3;
  OutputParserOptions parser;
  std::vector<std::string> stop;
  bool include_stop_str = false;
  bool skip_special = true;
  std::vector<TokenId> hidden_final_tokens;  // EOS + stop_token_ids: not shown when final
};

struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;
  std::vector<TopLogprob> top;
};

struct ChoiceDelta {
  std::vector<ParseEvent> events;  // chat
  std::string text;                // completions
  std::vector<TokenId> token_ids;  // tokens consumed by this delta
  std::vector<TokenLogprob> logprobs;
  bool has_payload() const {
    return !events.empty() || !text.empty() || !token_ids.empty() || !logprobs.empty();
  }
};

class ChoiceStream {
 public:
  // `tok` may be null (no text); it must outlive the stream.
  ChoiceStream(const Tokenizer* tok, ChoiceStreamOptions opts);

  // One engine event with a token (has_token); with_logprobs: keep e.logprob / e.top_logprobs.
  void push_token(const TokenEvent& e, bool with_logprobs, ChoiceDelta& out);
  // Detokenized text (the entry point below the detokenizer; used directly by tests).
  void push_text(std::string_view text, ChoiceDelta& out);
  // End of generation: flushes the detokenizer, the stop matcher and the parser.
  void finish(ChoiceDelta& out);

  bool stopped() const { return stop_ && stop_->stopped(); }
  int32_t n_tokens() const { return n_tokens_; }
  const ParsedOutput& output() const { return folded_; }  // chat
  const std::string& text() const { return text_; }       // completions
  const std::vector<TokenId>& token_ids() const { return token_ids_; }
  bool has_tool_calls() const { return !folded_.tool_calls.empty(); }

 private:
  void emit_text(std::string_view text, bool final, ChoiceDelta& out);

  const Tokenizer* tok_;
  ChoiceStreamOptions opts_;
  std::optional<IncrementalDetokenizer> detok_;
  std::optional<StopStringMatcher> stop_;
  std::optional<ChatOutputParser> parser_;
  ParsedOutput folded_;
  std::string text_;
  std::vector<TokenId> token_ids_;
  int32_t n_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace dss
