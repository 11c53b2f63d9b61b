#include "text/reasoning_parser.h"

#include "text/chat_tokens.h"
#include "text/marker_scan.h"

namespace dss {

std::vector<ParseEvent> ReasoningParser::feed(std::string_view delta) {
  std::vector<ParseEvent> out;
  buf_.append(delta);
  step(out, /*final=*/false);
  return out;
}

std::vector<ParseEvent> ReasoningParser::finish() {
  std::vector<ParseEvent> out;
  step(out, /*final=*/true);
  return out;
}

void ReasoningParser::step(std::vector<ParseEvent>& out, bool final) {
  static const std::string begin = tok::kThinkBegin, end = tok::kThinkEnd;
  static const std::vector<std::string> end_markers = {end};
  if (state_ == State::kStart) {
    if (buf_.compare(0, begin.size(), begin) == 0 && buf_.size() >= begin.size()) {
      buf_.erase(0, begin.size());
      state_ = State::kReasoning;
    } else if (!final && begin.compare(0, buf_.size(), buf_) == 0) {
      return;  // still a possible `<think>`
    } else {
      state_ = State::kContent;
    }
  }
  if (state_ == State::kReasoning) {
    size_t p = buf_.find(end);
    if (p != std::string::npos) {
      if (p > 0) out.push_back(ParseEvent::reasoning(buf_.substr(0, p)));
      buf_.erase(0, p + end.size());
      state_ = State::kContent;
    } else {
      size_t n = final ? buf_.size() : safe_prefix_len(buf_, end_markers);
      if (n > 0) out.push_back(ParseEvent::reasoning(buf_.substr(0, n)));
      buf_.erase(0, n);
      return;
    }
  }
  if (state_ == State::kContent && !buf_.empty()) {
    out.push_back(ParseEvent::content(std::move(buf_)));
    buf_.clear();
  }
}

bool prompt_opens_reasoning(std::string_view prompt) {
  std::string_view b = tok::kThinkBegin;
  return prompt.size() >= b.size() && prompt.substr(prompt.size() - b.size()) == b;
}

}  // namespace dss
