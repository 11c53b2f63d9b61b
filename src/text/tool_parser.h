// ToolParser: finds tool calls in streamed model content, for one ChatFormat.
//
//   kV3   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```
//         <｜tool▁call▁end｜> (calls separated by optional whitespace) <｜tool▁calls▁end｜>
//   kV31  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>...
//         <｜tool▁calls▁end｜>
//   kV32  \n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n<｜DSML｜parameter name="K"
//         string="true|false">V</｜DSML｜parameter>...</｜DSML｜invoke>...</｜DSML｜function_calls>
//         (a `tool_calls` block name is accepted too); ARGS are rebuilt as a JSON object.
// Contract:
//  * Text outside call blocks is content, emitted as soon as it cannot be the start of a marker.
//  * A call is emitted (one kToolCall event: id, name, full arguments) only when its end marker
//    has arrived and its arguments are a valid JSON object. Arguments are not streamed piecewise;
//    in exchange a call is never announced and then retracted.
//  * Malformed output (bad JSON, junk between calls, a block with no calls) and truncated output
//    (finish() inside a block) are passed through as content, raw and complete from the first
//    unparsed byte (from the block marker when no call of that block succeeded), plus a kWarning
//    event; after that the rest of the stream is content. Nothing is dropped; nothing throws.
//  * Any chunking of the same text yields events whose fold (ParsedOutput) is identical.
// Threading: one instance per stream.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/chat_format.h"
#include "text/parse_event.h"

namespace dss {

// How one format spells its blocks and calls (tool_format_v3.cc, _v31.cc, _v32.cc).
struct ToolFormat {
  std::vector<std::pair<std::string, std::string>> blocks;  // (begin variant, its end marker)
  std::string call_begin, call_end;
  // Parses the text between call_begin and call_end; false when malformed.
  bool (*parse_call)(std::string_view body, std::string& name, std::string& arguments);
};
const ToolFormat& tool_format_v3();
const ToolFormat& tool_format_v31();
const ToolFormat& tool_format_v32();
const ToolFormat& tool_format(ChatFormat f);

class ToolParser {
 public:
  explicit ToolParser(ChatFormat format, std::string id_prefix = "call_");

  std::vector<ParseEvent> feed(std::string_view delta);
  std::vector<ParseEvent> finish();

  int32_t n_tool_calls() const { return n_calls_; }
  bool had_warning() const { return had_warning_; }

 private:
  enum class State { kContent, kBetween, kInCall, kPassThrough };
  void step(std::vector<ParseEvent>& out, bool final);
  // One state's work; true when the state machine should run again.
  bool step_content(std::vector<ParseEvent>& out, bool final);
  bool step_between(std::vector<ParseEvent>& out, bool final);
  bool step_in_call(std::vector<ParseEvent>& out, bool final);
  void fail(std::vector<ParseEvent>& out, const char* why);

  const ToolFormat* fmt_;
  std::vector<std::string> begin_markers_;
  std::string id_prefix_;
  State state_ = State::kContent;
  std::string buf_;        // received, not yet consumed
  std::string block_raw_;  // consumed text of the current block since its start / last call
  std::string block_end_;  // end marker of the current block
  int32_t n_calls_ = 0, n_calls_in_block_ = 0;
  bool had_warning_ = false;
};

}  // namespace dss
