// ParseEvent: what the streaming output parsers emit, and how events map to OpenAI deltas.
//
// Event kinds: content text, reasoning text, one complete tool call (emitted only once its
// text is complete and valid, so a call that later turns out truncated or malformed is never
// announced), and warnings (malformed or truncated tool output that was passed through as
// content). ParsedOutput folds a sequence of events into the non-streamed result; folding the
// events of any chunking of the same text gives the same ParsedOutput (the parsers' invariant).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/json.h"

namespace dss {

struct ParseEvent {
  enum class Kind { kContent, kReasoning, kToolCall, kWarning };
  Kind kind = Kind::kContent;
  std::string text;         // content / reasoning text, tool-call arguments, or warning message
  int32_t tool_index = -1;  // kToolCall: 0, 1, ... in order of appearance
  std::string tool_id;      // kToolCall
  std::string tool_name;    // kToolCall

  static ParseEvent content(std::string t) { return {Kind::kContent, std::move(t)}; }
  static ParseEvent reasoning(std::string t) { return {Kind::kReasoning, std::move(t)}; }
  static ParseEvent warning(std::string t) { return {Kind::kWarning, std::move(t)}; }
};

struct ParsedToolCall {
  std::string id, name, arguments;
  bool operator==(const ParsedToolCall&) const = default;
};

struct ParsedOutput {
  std::string content;
  std::string reasoning_content;
  std::vector<ParsedToolCall> tool_calls;
  std::vector<std::string> warnings;

  void apply(const ParseEvent& e);
  void apply(const std::vector<ParseEvent>& events) {
    for (const ParseEvent& e : events) apply(e);
  }
  bool operator==(const ParsedOutput&) const = default;
};

// One OpenAI `choices[].delta` object for a batch of events: {"content"?, "reasoning_content"?,
// "tool_calls"?: [{index, id, type: "function", function: {name, arguments}}]}. Warnings are not
// part of the delta (report them out of band). Returns an empty object when nothing to send.
Json to_openai_delta(const std::vector<ParseEvent>& events);

}  // namespace dss
