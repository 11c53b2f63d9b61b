#include "server/tool_call_grammar.h"

#include <set>
#include <utility>

#include "base/check.h"
#include "base/str_cat.h"
#include "grammar/json_schema.h"
#include "grammar/utf8_ranges.h"
#include "text/chat_tokens.h"

namespace dss {

using grammar::Expr;
using grammar::GrammarIr;

const char* tool_call_block_marker(ChatFormat fmt) {
  static constexpr const char* kDsmlCalls = "<｜DSML｜function_calls>";  // tok::kDsml inside
  return fmt == ChatFormat::kV32 ? kDsmlCalls : tok::kCallsBegin;
}

namespace {

// `function.strict` is true (any other value, of any type, is not).
bool is_strict(const OrderedJson& fn) {
  auto it = fn.find("strict");
  return it != fn.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

bool has_strict_tool(const OrderedJson& tools) {
  for (const OrderedJson& t : tools)
    if (t.is_object() && t.contains("function") && t["function"].is_object() &&
        is_strict(t["function"]))
      return true;
  return false;
}

const std::vector<std::string>& tool_call_control_tokens() {
  static const std::vector<std::string> k = {tok::kCallsBegin, tok::kCallsEnd, tok::kCallBegin,
                                             tok::kCallEnd, tok::kToolSep};
  return k;
}

namespace {

constexpr grammar::JsonSchemaOptions kArgsOptions{grammar::JsonWhitespace::kCompact};

// The stand-in bytes of a V3 / V3.1 marker token.
Result<Expr> control(const grammar::TokenVocab& vocab, const char* text) {
  std::optional<std::string> b = vocab.control_literal(text);
  if (!b)
    return Status::error("tool_choice: the vocabulary has no control token ", text,
                         " (the tokenizer is not DeepSeek's)");
  return Expr::literal(*b);
}

// A JSON Schema's grammar imported into `ir` under `prefix`: a reference to its root.
Result<Expr> import_schema(GrammarIr& ir, const OrderedJson& schema, const std::string& prefix,
                           const std::string& field) {
  Result<GrammarIr> sub = grammar::json_schema_to_ir(schema, kArgsOptions);
  if (!sub) return Status::error(field, ": ", sub.status().message());
  return Expr::ref(ir.import(*sub, prefix));
}

// `parameters` as a JSON argument object (V3, V3.1).
Result<Expr> json_args(GrammarIr& ir, const OrderedJson& fn, const std::string& prefix,
                       const std::string& field) {
  // OpenAI: omitting parameters defines a function with an empty parameter list.
  if (!fn.contains("parameters") || fn["parameters"].is_null()) return Expr::literal("{}");
  return import_schema(ir, fn["parameters"], prefix, field);
}

// A property the V3.2 encoder writes with string="true": exactly a string, with no keyword the
// raw form could not enforce (pattern, format, enum, const).
bool plain_string(const OrderedJson& s) {
  if (!s.is_object() || !s.contains("type") || s["type"] != "string") return false;
  static const std::set<std::string> ok = {"type",     "title",     "description", "default",
                                           "examples", "minLength", "maxLength"};
  for (const auto& [k, v] : s.items())
    if (!ok.contains(k)) return false;
  for (const char* k : {"minLength", "maxLength"})
    if (s.contains(k) && !s[k].is_number_unsigned()) return false;
  const int64_t lo = s.value("minLength", int64_t{0});
  const int64_t hi = s.value("maxLength", int64_t{grammar::kMaxSchemaLength});
  return lo <= hi && hi <= grammar::kMaxSchemaLength;
}

// The string members of a property's enum / const (the encoder writes them raw, string="true");
// `all` says whether every member is a string.
std::vector<std::string> string_members(const OrderedJson& s, bool& all) {
  std::vector<std::string> out;
  all = false;
  if (!s.is_object() || (!s.contains("enum") && !s.contains("const"))) return out;
  const OrderedJson members = s.contains("enum") ? s["enum"] : OrderedJson::array({s["const"]});
  if (!members.is_array()) return out;
  all = true;
  for (const OrderedJson& m : members) {
    if (m.is_string() && m.get<std::string>().find('<') == std::string::npos) {
      out.push_back(m.get<std::string>());
    } else {
      all = false;
    }
  }
  return out;
}

// One V3.2 parameter: `<｜DSML｜parameter name="K" string="...">VALUE</｜DSML｜parameter>\n`.
// As the reference encoder writes it: a string value raw with string="true", any other value as
// JSON with string="false".
Result<Expr> dsml_param(GrammarIr& ir, const std::string& key, const OrderedJson& prop,
                        const OrderedJson& params, const std::string& prefix,
                        const std::string& field) {
  const std::string d = tok::kDsml;
  const std::string open = "<" + d + "parameter name=\"" + key + "\" string=\"";
  const std::string close = "</" + d + "parameter>\n";
  std::vector<Expr> forms;
  bool all_strings = false;
  if (plain_string(prop)) {
    grammar::CodepointSet raw;
    raw.add('<');
    const int32_t lo = prop.value("minLength", 0);
    const int32_t hi =
        prop.contains("maxLength") ? prop["maxLength"].get<int32_t>() : grammar::kUnbounded;
    forms.push_back(Expr::seq({Expr::literal(open + "true\">"),
                               Expr::repeat(grammar::utf8_expr(raw.complement()), lo, hi)}));
    all_strings = true;
  } else if (std::vector<std::string> m = string_members(prop, all_strings); !m.empty()) {
    forms.push_back(Expr::seq({Expr::literal(open + "true\">"), Expr::literals(std::move(m))}));
  }
  if (!all_strings) {
    // A value schema on its own: $ref targets of the tool's schema stay resolvable.
    OrderedJson value_schema = prop;
    if (value_schema.is_object())
      for (const char* defs : {"$defs", "definitions"})
        if (params.contains(defs) && !value_schema.contains(defs))
          value_schema[defs] = params[defs];
    DSS_ASSIGN_OR_RETURN(Expr value, import_schema(ir, value_schema, prefix, field));
    forms.push_back(Expr::seq({Expr::literal(open + "false\">"), std::move(value)}));
  }
  return Expr::seq({Expr::alt(std::move(forms)), Expr::literal(close)});
}

// `parameters` as V3.2 DSML parameters (see the header).
Result<Expr> dsml_args(GrammarIr& ir, const OrderedJson& fn, const std::string& prefix,
                       const std::string& field) {
  if (!fn.contains("parameters") || fn["parameters"].is_null())
    return Expr::alt({Expr::empty(), Expr::literal("\n")});
  const OrderedJson& p = fn["parameters"];
  static const std::set<std::string> ok = {
      "type",    "properties",  "required", "additionalProperties",
      "$defs",   "definitions", "title",    "description",
      "$schema", "$id",         "$comment", "default",
      "examples"};
  if (!p.is_object()) return Status::error(field, ": must be a JSON Schema object");
  for (const auto& [k, v] : p.items())
    if (!ok.contains(k))
      return Status::error(field, ": a forced V3.2 (DSML) tool call writes each property as a ",
                           "parameter, so the schema must be an object of properties; '", k,
                           "' at its top level is not supported");
  if (p.contains("type") && p["type"] != "object")
    return Status::error(field, ".type: a forced V3.2 (DSML) tool call needs \"object\"");
  std::set<std::string> required;
  if (p.contains("required")) {
    if (!p["required"].is_array()) return Status::error(field, ".required: must be an array");
    for (const OrderedJson& r : p["required"])
      if (r.is_string()) required.insert(r.get<std::string>());
  }
  std::vector<Expr> params;
  if (p.contains("properties")) {
    if (!p["properties"].is_object()) return Status::error(field, ".properties: must be an object");
    int32_t i = 0;
    for (const auto& [key, prop] : p["properties"].items()) {
      if (key.empty() || key.find_first_of("\"<>") != std::string::npos)
        return Status::error(field, ".properties: the name '", key,
                             "' cannot be a DSML parameter name");
      DSS_ASSIGN_OR_RETURN(Expr e, dsml_param(ir, key, prop, p, str_cat(prefix, "p", i++, "-"),
                                              str_cat(field, ".properties.", key)));
      params.push_back(required.contains(key) ? std::move(e) : Expr::optional(std::move(e)));
    }
  }
  // No parameter at all: the encoder joins none with "\n" (`>\n\n</｜DSML｜invoke>`).
  if (required.empty()) return Expr::alt({Expr::seq(std::move(params)), Expr::literal("\n")});
  return Expr::seq(std::move(params));
}

// Any DSML parameters (a non-strict tool under tool_choice auto): names without quotes or
// markup, values without '<' (a JSON value holding '<' cannot be written here).
Expr free_dsml_params() {
  const std::string d = tok::kDsml;
  grammar::CodepointSet name_bad, value_bad;
  for (char c : std::string("\"<>\n")) name_bad.add(static_cast<uint32_t>(c));
  value_bad.add('<');
  Expr param =
      Expr::seq({Expr::literal("<" + d + "parameter name=\""),
                 Expr::plus(grammar::utf8_expr(name_bad.complement())),
                 Expr::literal("\" string=\""), Expr::literals({"true", "false"}),
                 Expr::literal("\">"), Expr::star(grammar::utf8_expr(value_bad.complement())),
                 Expr::literal("</" + d + "parameter>\n")});
  return Expr::alt({Expr::star(std::move(param)), Expr::literal("\n")});
}

// One call of tool `fn` (tools[index]) in format `fmt`; `free_args`: any arguments (a
// non-strict tool under tool_choice auto).
Result<Expr> one_call(GrammarIr& ir, ChatFormat fmt, const OrderedJson& fn, size_t index,
                      bool free_args, const grammar::TokenVocab& vocab) {
  const std::string name = fn["name"].get<std::string>();
  const std::string field = str_cat("tools[", index, "].function.parameters");
  const std::string prefix = str_cat("tool", index, "-");
  if (fmt == ChatFormat::kV32) {
    if (name.find_first_of("\"<>") != std::string::npos)
      return Status::error("tools[", index, "].function.name: '", name,
                           "' cannot be a DSML invoke name");
    Expr params = free_dsml_params();
    if (!free_args) {
      DSS_ASSIGN_OR_RETURN(params, dsml_args(ir, fn, prefix, field));
    }
    const std::string d = tok::kDsml;
    return Expr::seq({Expr::literal("<" + d + "invoke name=\"" + name + "\">\n"), std::move(params),
                      Expr::literal("</" + d + "invoke>")});
  }
  // V3: begin `function` sep `NAME\n```json\n` ARGS `\n```` end; V3.1: begin NAME sep ARGS end.
  DSS_ASSIGN_OR_RETURN(Expr begin, control(vocab, tok::kCallBegin));
  DSS_ASSIGN_OR_RETURN(Expr sep, control(vocab, tok::kToolSep));
  DSS_ASSIGN_OR_RETURN(Expr end, control(vocab, tok::kCallEnd));
  Expr args = free_args
                  ? Expr::ref(ir.import(grammar::json_object_ir(kArgsOptions.whitespace), prefix))
                  : Expr::empty();
  if (!free_args) {
    DSS_ASSIGN_OR_RETURN(args, json_args(ir, fn, prefix, field));
  }
  const bool v3 = fmt == ChatFormat::kV3;
  return Expr::seq({std::move(begin), Expr::literal(v3 ? "function" : name), std::move(sep),
                    Expr::literal(v3 ? name + "\n```json\n" : std::string()), std::move(args),
                    Expr::literal(v3 ? "\n```" : ""), std::move(end)});
}

// The block around `call` (one rule: any allowed call), once or repeated; `after_marker`: without
// the block's opening marker (the gate before the grammar consumed it).
Result<Expr> call_block(ChatFormat fmt, const Expr& call, bool several, bool after_marker,
                        const grammar::TokenVocab& vocab) {
  if (fmt == ChatFormat::kV32) {
    const std::string d = tok::kDsml;
    Expr more = several ? Expr::star(Expr::seq({Expr::literal("\n"), call})) : Expr::empty();
    Expr open =
        after_marker ? Expr::literal("\n") : Expr::literal("\n\n<" + d + "function_calls>\n");
    return Expr::seq(
        {std::move(open), call, std::move(more), Expr::literal("\n</" + d + "function_calls>")});
  }
  DSS_ASSIGN_OR_RETURN(Expr begin, control(vocab, tok::kCallsBegin));
  DSS_ASSIGN_OR_RETURN(Expr end, control(vocab, tok::kCallsEnd));
  Expr next = fmt == ChatFormat::kV3 ? Expr::seq({Expr::literal("\n"), call}) : call;
  Expr more = several ? Expr::star(std::move(next)) : Expr::empty();
  if (after_marker) return Expr::seq({call, std::move(more), std::move(end)});
  return Expr::seq({std::move(begin), call, std::move(more), std::move(end)});
}

}  // namespace

Result<GrammarIr> forced_tool_calls_ir(const ForcedToolCalls& f, const grammar::TokenVocab& vocab) {
  DSS_CHECK(f.tools != nullptr && f.tools->is_array(), "tools must be an array");
  GrammarIr ir;
  ir.root = ir.rule_id("root");
  const int32_t call_rule = ir.rule_id("call");
  std::vector<Expr> calls;
  for (size_t i = 0; i < f.tools->size(); ++i) {
    const OrderedJson& fn = (*f.tools)[i]["function"];
    if (!f.only_name.empty() && fn["name"] != f.only_name) continue;
    const bool free_args = f.after_marker && !is_strict(fn);
    DSS_ASSIGN_OR_RETURN(Expr call, one_call(ir, f.format, fn, i, free_args, vocab));
    calls.push_back(std::move(call));
  }
  if (calls.empty())
    return Status::error("tool_choice.function.name: '", f.only_name, "' is not in tools");
  ir.define(call_rule, Expr::alt(std::move(calls)));
  DSS_ASSIGN_OR_RETURN(Expr block,
                       call_block(f.format, Expr::ref(call_rule), f.only_name.empty() && f.several,
                                  f.after_marker, vocab));
  ir.define(ir.root, std::move(block));
  return ir;
}

Result<std::shared_ptr<grammar::CompiledGrammar>> compile_forced_tool_calls(
    const ForcedToolCalls& f, grammar::GrammarCompiler& compiler) {
  DSS_CHECK(f.tools != nullptr, "tools must be given");
  std::string key =
      str_cat("tool_calls:", chat_format_name(f.format), ":", f.several ? 'n' : '1',
              f.after_marker ? 'a' : 'f', ":", f.only_name.size(), ":", f.only_name, ":");
  key += f.tools->dump();
  return compiler.from_ir_cached(std::move(key),
                                 [&] { return forced_tool_calls_ir(f, *compiler.vocab()); });
}

}  // namespace dss
