#include "server/choice_stream.h"

#include <algorithm>

namespace dss {

ChoiceStream::ChoiceStream(const Tokenizer* tok, ChoiceStreamOptions opts)
    : tok_(tok), opts_(std::move(opts)) {
  if (tok_) detok_.emplace(*tok_, opts_.skip_special);
  if (!opts_.stop.empty()) stop_.emplace(opts_.stop, opts_.include_stop_str);
  if (opts_.chat) parser_.emplace(opts_.format, opts_.parser);
}

void ChoiceStream::push_token(const TokenEvent& e, bool with_logprobs, ChoiceDelta& out) {
  if (finished_ || stopped() || !e.has_token) return;
  ++n_tokens_;
  token_ids_.push_back(e.token);
  out.token_ids.push_back(e.token);
  if (with_logprobs) out.logprobs.push_back(TokenLogprob{e.token, e.logprob, e.top_logprobs});
  if (!detok_) return;
  const bool hidden = e.is_last() && e.finish == FinishReason::kStop &&
                      std::find(opts_.hidden_final_tokens.begin(), opts_.hidden_final_tokens.end(),
                                e.token) != opts_.hidden_final_tokens.end();
  if (hidden) return;
  emit_text(detok_->push(e.token), false, out);
}

void ChoiceStream::push_text(std::string_view text, ChoiceDelta& out) {
  if (finished_ || stopped()) return;
  emit_text(text, false, out);
}

void ChoiceStream::finish(ChoiceDelta& out) {
  if (finished_) return;
  if (detok_ && !stopped()) emit_text(detok_->finish(), false, out);
  emit_text("", true, out);
  finished_ = true;
}

void ChoiceStream::emit_text(std::string_view text, bool final, ChoiceDelta& out) {
  std::string shown;
  if (stop_) {
    if (!text.empty()) shown = stop_->feed(text).text;
    if (final) shown += stop_->finish();
  } else {
    shown.assign(text);
  }
  if (!opts_.chat) {
    text_ += shown;
    out.text += shown;
    return;
  }
  std::vector<ParseEvent> events;
  if (!shown.empty()) events = parser_->feed(shown);
  if (final) {
    std::vector<ParseEvent> rest = parser_->finish();
    events.insert(events.end(), std::make_move_iterator(rest.begin()),
                  std::make_move_iterator(rest.end()));
  }
  for (ParseEvent& ev : events) {
    folded_.apply(ev);
    out.events.push_back(std::move(ev));
  }
}

}  // namespace dss
