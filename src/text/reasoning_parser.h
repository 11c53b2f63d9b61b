// ReasoningParser: splits model output into reasoning_content (`<think>` ... `</think>`) and
// content, incrementally.
//
// If the prompt already opened the thinking block (V3.1/V3.2 thinking mode end the prompt with
// `<think>`), construct with starts_in_reasoning = true: everything up to the first `</think>`
// is reasoning. Otherwise a `<think>` at the very start of the output opens it (R1 style); any
// other start means the whole output is content. A missing `</think>` (output cut by a length
// limit) leaves all the text as reasoning. Text after `</think>` is content, verbatim.
// feed() never emits a byte that a later chunk could reclassify: a trailing partial `</think>`
// is held back until decided. Concatenated events are the same for any chunking of the text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text/parse_event.h"

namespace dss {

class ReasoningParser {
 public:
  explicit ReasoningParser(bool starts_in_reasoning) {
    state_ = starts_in_reasoning ? State::kReasoning : State::kStart;
  }
  std::vector<ParseEvent> feed(std::string_view delta);
  std::vector<ParseEvent> finish();

 private:
  enum class State { kStart, kReasoning, kContent };
  void step(std::vector<ParseEvent>& out, bool final);

  State state_;
  std::string buf_;
};

// True if a rendered prompt leaves the model inside a thinking block (ends with `<think>`).
bool prompt_opens_reasoning(std::string_view prompt);

}  // namespace dss
