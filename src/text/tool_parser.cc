#include "text/tool_parser.h"

#include "text/marker_scan.h"

namespace dss {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

bool is_proper_prefix(std::string_view s, std::string_view of) {
  return s.size() < of.size() && of.substr(0, s.size()) == s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

const ToolFormat& tool_format(ChatFormat f) {
  switch (f) {
    case ChatFormat::kV3:
      return tool_format_v3();
    case ChatFormat::kV31:
      return tool_format_v31();
    case ChatFormat::kV32:
      return tool_format_v32();
  }
  return tool_format_v3();
}

ToolParser::ToolParser(ChatFormat format, std::string id_prefix)
    : fmt_(&tool_format(format)), id_prefix_(std::move(id_prefix)) {
  for (const auto& b : fmt_->blocks) begin_markers_.push_back(b.first);
}

std::vector<ParseEvent> ToolParser::feed(std::string_view delta) {
  std::vector<ParseEvent> out;
  buf_.append(delta);
  step(out, /*final=*/false);
  return out;
}

std::vector<ParseEvent> ToolParser::finish() {
  std::vector<ParseEvent> out;
  step(out, /*final=*/true);
  return out;
}

void ToolParser::fail(std::vector<ParseEvent>& out, const char* why) {
  std::string text = block_raw_ + buf_;
  if (!text.empty()) out.push_back(ParseEvent::content(std::move(text)));
  out.push_back(ParseEvent::warning(why));
  block_raw_.clear();
  buf_.clear();
  had_warning_ = true;
  state_ = State::kPassThrough;
}

void ToolParser::step(std::vector<ParseEvent>& out, bool final) {
  bool more = true;
  while (more) {
    switch (state_) {
      case State::kPassThrough:
        if (!buf_.empty()) out.push_back(ParseEvent::content(std::move(buf_)));
        buf_.clear();
        more = false;
        break;
      case State::kContent:
        more = step_content(out, final);
        break;
      case State::kBetween:
        more = step_between(out, final);
        break;
      case State::kInCall:
        more = step_in_call(out, final);
        break;
    }
  }
}

bool ToolParser::step_content(std::vector<ParseEvent>& out, bool final) {
  MarkerHit hit = find_first_marker(buf_, begin_markers_);
  if (hit.pos != std::string_view::npos) {
    if (hit.pos > 0) out.push_back(ParseEvent::content(buf_.substr(0, hit.pos)));
    const auto& [begin, end] = fmt_->blocks[hit.i_marker];
    block_raw_ = begin;
    block_end_ = end;
    buf_.erase(0, hit.pos + begin.size());
    n_calls_in_block_ = 0;
    state_ = State::kBetween;
    return true;
  }
  size_t n = final ? buf_.size() : safe_prefix_len(buf_, begin_markers_);
  if (n > 0) out.push_back(ParseEvent::content(buf_.substr(0, n)));
  buf_.erase(0, n);
  return false;
}

bool ToolParser::step_between(std::vector<ParseEvent>& out, bool final) {
  size_t ws = 0;
  while (ws < buf_.size() && is_space(buf_[ws])) ++ws;
  block_raw_.append(buf_, 0, ws);
  buf_.erase(0, ws);
  if (starts_with(buf_, fmt_->call_begin)) {
    block_raw_ += fmt_->call_begin;
    buf_.erase(0, fmt_->call_begin.size());
    state_ = State::kInCall;
    return true;
  }
  if (starts_with(buf_, block_end_)) {
    buf_.erase(0, block_end_.size());
    if (n_calls_in_block_ == 0) {
      block_raw_ += block_end_;
      fail(out, "tool call block without any call; passed through as content");
      return true;
    }
    block_raw_.clear();
    state_ = State::kContent;
    return true;
  }
  bool maybe = buf_.empty() || is_proper_prefix(buf_, fmt_->call_begin) ||
               is_proper_prefix(buf_, block_end_);
  if (!maybe) {
    fail(out, "unexpected text inside a tool call block; passed through as content");
    return true;
  }
  if (final) {
    // Cut after complete calls (no closing marker yet): the calls stand as they are.
    if (buf_.empty() && n_calls_in_block_ > 0) {
      block_raw_.clear();
      return false;
    }
    fail(out, "tool call block truncated; passed through as content");
    return true;
  }
  return false;
}

bool ToolParser::step_in_call(std::vector<ParseEvent>& out, bool final) {
  size_t p = buf_.find(fmt_->call_end);
  if (p == std::string::npos) {
    if (!final) return false;
    fail(out, "tool call truncated; passed through as content");
    return true;
  }
  std::string name, args;
  if (!fmt_->parse_call(std::string_view(buf_).substr(0, p), name, args)) {
    fail(out, "malformed tool call; passed through as content");
    return true;
  }
  ParseEvent e;
  e.kind = ParseEvent::Kind::kToolCall;
  e.tool_index = n_calls_;
  e.tool_id = id_prefix_ + std::to_string(n_calls_);
  e.tool_name = std::move(name);
  e.text = std::move(args);
  out.push_back(std::move(e));
  ++n_calls_;
  ++n_calls_in_block_;
  buf_.erase(0, p + fmt_->call_end.size());
  block_raw_.clear();
  state_ = State::kBetween;
  return true;
}

}  // namespace dss
