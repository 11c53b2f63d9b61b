#include "server/response_json.h"

namespace dss {

OrderedJson usage_json(const Usage& u) {
  OrderedJson j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", u.cached_tokens}};
  return j;
}

std::string token_text(const Tokenizer* tok, TokenId id) {
  if (!tok) return "";
  const TokenId ids[1] = {id};
  return tok->decode_text(ids);
}

namespace {

OrderedJson bytes_of(const Tokenizer* tok, TokenId id) {
  OrderedJson b = OrderedJson::array();
  if (!tok) return b;
  for (unsigned char c : tok->piece(id)) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

OrderedJson chat_logprobs_json(const Tokenizer* tok, const std::vector<TokenLogprob>& lps) {
  OrderedJson content = OrderedJson::array();
  for (const TokenLogprob& lp : lps) {
    OrderedJson e;
    e["token"] = token_text(tok, lp.token);
    e["logprob"] = lp.logprob;
    e["bytes"] = bytes_of(tok, lp.token);
    e["top_logprobs"] = OrderedJson::array();
    for (const TopLogprob& t : lp.top) {
      OrderedJson a;
      a["token"] = token_text(tok, t.token);
      a["logprob"] = t.logprob;
      a["bytes"] = bytes_of(tok, t.token);
      e["top_logprobs"].push_back(std::move(a));
    }
    if (!tok) e["token_id"] = lp.token;
    content.push_back(std::move(e));
  }
  return OrderedJson{{"content", std::move(content)}};
}

OrderedJson completion_logprobs_json(const Tokenizer* tok, const std::vector<TokenLogprob>& lps,
                                     int64_t text_offset) {
  OrderedJson j;
  j["tokens"] = OrderedJson::array();
  j["token_logprobs"] = OrderedJson::array();
  j["top_logprobs"] = OrderedJson::array();
  j["text_offset"] = OrderedJson::array();
  for (const TokenLogprob& lp : lps) {
    const std::string text =
        tok ? token_text(tok, lp.token) : "token_id:" + std::to_string(lp.token);
    j["tokens"].push_back(text);
    j["token_logprobs"].push_back(lp.logprob);
    OrderedJson top = OrderedJson::object();
    for (const TopLogprob& t : lp.top)
      top[tok ? token_text(tok, t.token) : "token_id:" + std::to_string(t.token)] = t.logprob;
    j["top_logprobs"].push_back(std::move(top));
    j["text_offset"].push_back(text_offset);
    text_offset += static_cast<int64_t>(text.size());
  }
  return j;
}

OrderedJson chat_message_json(const ParsedOutput& out) {
  OrderedJson m;
  m["role"] = "assistant";
  if (out.content.empty() && !out.tool_calls.empty())
    m["content"] = nullptr;
  else
    m["content"] = out.content;
  if (!out.reasoning_content.empty()) m["reasoning_content"] = out.reasoning_content;
  if (!out.tool_calls.empty()) {
    OrderedJson calls = OrderedJson::array();
    for (const ParsedToolCall& c : out.tool_calls) {
      OrderedJson call;
      call["id"] = c.id;
      call["type"] = "function";
      call["function"] = {{"name", c.name}, {"arguments", c.arguments}};
      calls.push_back(std::move(call));
    }
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

}  // namespace dss
