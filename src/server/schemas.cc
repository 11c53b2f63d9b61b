#include "server/schemas.h"

#include <cmath>
#include <limits>

#include "base/str_cat.h"

namespace dss {

namespace {

constexpr int32_t kMaxN = 16;

// An integer JSON value in [lo, hi] into `out`; false for non-integers and anything out of range
// (nlohmann's get<int32_t> would truncate 2^32 + 5 to 5; an unsigned above INT64_MAX would wrap).
bool int_in_range(const OrderedJson& v, int64_t lo, int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi)) return false;
    out = static_cast<int64_t>(u);
    return out >= lo;
  }
  out = v.get<int64_t>();
  return out >= lo && out <= hi;
}

// A token id: an integer in [0, INT32_MAX] (the vocabulary bound is the engine's check).
bool token_id_of(const OrderedJson& v, TokenId& out) {
  int64_t x = 0;
  if (!int_in_range(v, 0, std::numeric_limits<TokenId>::max(), x)) return false;
  out = static_cast<TokenId>(x);
  return true;
}

// Number fields: absent or null keeps the default.
template <typename T>
Status read_number(const OrderedJson& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) return Status::error(key, ": must be an integer");
    int64_t v = 0;
    if (!int_in_range(*it, static_cast<int64_t>(std::numeric_limits<T>::min()),
                      static_cast<int64_t>(std::numeric_limits<T>::max()), v))
      return Status::error(key, ": out of range");
    out = static_cast<T>(v);
  } else {
    if (!it->is_number()) return Status::error(key, ": must be a number");
    out = it->get<T>();
  }
  return Status::ok();
}

Status read_bool(const OrderedJson& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::ok();
  if (!it->is_boolean()) return Status::error(key, ": must be true or false");
  out = it->get<bool>();
  return Status::ok();
}

Status read_sampling(const OrderedJson& j, Endpoint ep, CompletionRequest& r) {
  SamplingParams& p = r.params;
  DSS_RETURN_IF_ERROR(read_number(j, "temperature", p.temperature));
  DSS_RETURN_IF_ERROR(read_number(j, "top_p", p.top_p));
  DSS_RETURN_IF_ERROR(read_number(j, "top_k", p.top_k));
  DSS_RETURN_IF_ERROR(read_number(j, "min_p", p.min_p));
  DSS_RETURN_IF_ERROR(read_number(j, "repetition_penalty", p.repetition_penalty));
  DSS_RETURN_IF_ERROR(read_number(j, "frequency_penalty", p.frequency_penalty));
  DSS_RETURN_IF_ERROR(read_number(j, "presence_penalty", p.presence_penalty));
  DSS_RETURN_IF_ERROR(read_number(j, "min_tokens", p.min_tokens));
  DSS_RETURN_IF_ERROR(read_bool(j, "ignore_eos", p.ignore_eos));
  DSS_RETURN_IF_ERROR(read_bool(j, "skip_special_tokens", p.skip_special_tokens));
  DSS_RETURN_IF_ERROR(read_bool(j, "include_stop_str_in_output", p.include_stop_str_in_output));
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (ep == Endpoint::kCompletions && key[4] == 'c') continue;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    DSS_RETURN_IF_ERROR(read_number(j, key, p.max_tokens));
    if (p.max_tokens < 1) return Status::error(key, " must be >= 1, got ", p.max_tokens);
    r.max_tokens_given = true;
    r.max_tokens_field = key;
  }
  if (auto it = j.find("seed"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return Status::error("seed: must be an integer");
    p.seed =
        it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(it->get<int64_t>());
  }
  if (auto it = j.find("stop"); it != j.end() && !it->is_null()) {
    if (it->is_string()) {
      p.stop = {it->get<std::string>()};
    } else if (it->is_array()) {
      for (const auto& s : *it) {
        if (!s.is_string()) return Status::error("stop: must be a string or a list of strings");
        p.stop.push_back(s.get<std::string>());
      }
    } else {
      return Status::error("stop: must be a string or a list of strings");
    }
  }
  if (auto it = j.find("stop_token_ids"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return Status::error("stop_token_ids: must be a list of token ids");
    for (size_t i = 0; i < it->size(); ++i) {
      const OrderedJson& t = (*it)[i];
      if (!t.is_number_integer())
        return Status::error("stop_token_ids: must be a list of token ids");
      TokenId id = 0;
      if (!token_id_of(t, id))
        return Status::error("stop_token_ids[", i, "]: ", t.dump(), " is not a token id");
      p.stop_token_ids.push_back(id);
    }
  }
  return Status::ok();
}

Status read_logprobs(const OrderedJson& j, Endpoint ep, SamplingParams& p) {
  auto it = j.find("logprobs");
  if (ep == Endpoint::kCompletions) {
    if (it == j.end() || it->is_null()) return Status::ok();
    if (!it->is_number_integer()) return Status::error("logprobs: must be an integer");
    int64_t v = 0;
    if (!int_in_range(*it, 0, 20, v))
      return Status::error("logprobs must be in [0, 20], got ", it->dump());
    p.logprobs = static_cast<int32_t>(v);
    return Status::ok();
  }
  bool want = false;
  DSS_RETURN_IF_ERROR(read_bool(j, "logprobs", want));
  int32_t top = 0;
  DSS_RETURN_IF_ERROR(read_number(j, "top_logprobs", top));
  if (top < 0 || top > 20) return Status::error("top_logprobs must be in [0, 20], got ", top);
  if (top > 0 && !want) return Status::error("top_logprobs: needs logprobs: true");
  p.logprobs = want ? top : -1;
  return Status::ok();
}

Status read_tool_choice(const OrderedJson& j, CompletionRequest& r) {
  auto it = j.find("tool_choice");
  const bool has_tools = !r.chat.tools.empty();
  if (it == j.end() || it->is_null()) {
    r.tool_choice = has_tools ? "auto" : "none";
    return Status::ok();
  }
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s != "none" && s != "auto" && s != "required")
      return Status::error("tool_choice: must be none, auto, required or a named function");
    if (s != "none" && !has_tools) return Status::error("tool_choice: '", s, "' needs tools");
    r.tool_choice = s;
    return Status::ok();
  }
  if (!it->is_object() || !it->contains("function") || !(*it)["function"].is_object() ||
      !(*it)["function"].contains("name") || !(*it)["function"]["name"].is_string())
    return Status::error(
        "tool_choice: must be none, auto, required or {\"type\": \"function\", \"function\": "
        "{\"name\": ...}}");
  r.tool_choice = "named";
  r.tool_choice_name = (*it)["function"]["name"].get<std::string>();
  for (const auto& t : r.chat.tools)
    if (t.contains("function") && t["function"].value("name", "") == r.tool_choice_name)
      return Status::ok();
  return Status::error("tool_choice.function.name: '", r.tool_choice_name,
                       "' is not one of the tools");
}

Status read_prompt(const OrderedJson& j, CompletionRequest& r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return Status::error("prompt: missing");
  const char* kShape =
      "prompt: must be a string, a list of strings, a list of token ids or a list of such lists";
  if (it->is_string()) {
    r.prompt_texts.push_back(it->get<std::string>());
    return Status::ok();
  }
  if (!it->is_array() || it->empty()) return Status::error(kShape);
  auto read_ids = [&](const OrderedJson& a, const std::string& where) -> Status {
    std::vector<TokenId> ids;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_number_integer()) return Status::error(kShape);
      TokenId id = 0;
      if (!token_id_of(a[i], id))
        return Status::error(where, "[", i, "]: ", a[i].dump(), " is not a token id");
      ids.push_back(id);
    }
    if (ids.empty()) return Status::error("prompt: must contain at least one token");
    r.prompt_ids.push_back(std::move(ids));
    return Status::ok();
  };
  const auto& first = (*it)[0];
  if (first.is_number_integer()) return read_ids(*it, "prompt");
  for (size_t i = 0; i < it->size(); ++i) {
    const OrderedJson& e = (*it)[i];
    if (first.is_string() && e.is_string()) {
      r.prompt_texts.push_back(e.get<std::string>());
    } else if (first.is_array() && e.is_array()) {
      DSS_RETURN_IF_ERROR(read_ids(e, str_cat("prompt[", i, "]")));
    } else {
      return Status::error(kShape);
    }
  }
  return Status::ok();
}

}  // namespace

Result<CompletionRequest> parse_completion_request(Endpoint endpoint, const OrderedJson& j) {
  if (!j.is_object()) return Status::error("body: must be a JSON object");
  CompletionRequest r;
  r.endpoint = endpoint;
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return Status::error("model: must be a string");
    r.model = it->get<std::string>();
  }
  DSS_RETURN_IF_ERROR(read_bool(j, "stream", r.stream));
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return Status::error("stream_options: must be an object");
    auto st = read_bool(*it, "include_usage", r.include_usage);
    if (!st) return Status::error("stream_options.include_usage: must be true or false");
    if (!r.stream) return Status::error("stream_options: only allowed with stream: true");
  }
  DSS_RETURN_IF_ERROR(read_number(j, "n", r.n));
  if (r.n < 1 || r.n > kMaxN) return Status::error("n must be in [1, ", kMaxN, "], got ", r.n);
  DSS_RETURN_IF_ERROR(read_bool(j, "return_token_ids", r.return_token_ids));
  DSS_RETURN_IF_ERROR(read_sampling(j, endpoint, r));
  DSS_RETURN_IF_ERROR(read_logprobs(j, endpoint, r.params));
  DSS_ASSIGN_OR_RETURN(r.constraint, parse_output_constraint(j));
  if (endpoint == Endpoint::kChat) {
    if (!j.contains("messages")) return Status::error("messages: missing");
    DSS_ASSIGN_OR_RETURN(r.chat, parse_chat_request(j));
    if (r.chat.messages.empty()) return Status::error("messages: must not be empty");
    DSS_RETURN_IF_ERROR(read_tool_choice(j, r));
    DSS_RETURN_IF_ERROR(read_bool(j, "parallel_tool_calls", r.parallel_tool_calls));
  } else {
    bool echo = false;
    DSS_RETURN_IF_ERROR(read_bool(j, "echo", echo));
    if (echo) return Status::error("echo: not supported");
    DSS_RETURN_IF_ERROR(read_prompt(j, r));
  }
  return r;
}

Status parse_sampling_params(const OrderedJson& j, SamplingParams& p) {
  CompletionRequest r;
  r.params = p;
  DSS_RETURN_IF_ERROR(read_sampling(j, Endpoint::kCompletions, r));
  DSS_RETURN_IF_ERROR(read_logprobs(j, Endpoint::kCompletions, r.params));
  p = std::move(r.params);
  return Status::ok();
}

}  // namespace dss
