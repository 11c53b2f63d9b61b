// The schema walk of json_schema.h: one function per keyword group, every keyword's meaning here.
#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "grammar/int_range.h"
#include "grammar/regex_parser.h"
#include "grammar/string_formats.h"

namespace dss::grammar {
namespace {

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",    "description", "$schema",  "$id",
                                          "$comment", "default",     "examples", "deprecated",
                                          "readOnly", "writeOnly",   "$defs",    "definitions"};
  return k;
}

const std::set<std::string>& handled() {
  static const std::set<std::string> k = {"type",
                                          "nullable",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
  return k;
}

const std::set<std::string> kObjectKeys = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeys = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string> kStringKeys = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kIntegerKeys = {"minimum", "maximum", "exclusiveMinimum",
                                            "exclusiveMaximum"};

bool type_matches(const OrderedJson& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return false;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const OrderedJson& root, JsonWhitespace ws) : root_(root), json_(ir_, ws) {}

  Result<GrammarIr> run() {
    const int32_t r = ir_.rule_id("root");
    ir_.root = r;
    DSS_ASSIGN_OR_RETURN(Expr e, compile(root_, "#"));
    ir_.define(r, std::move(e));
    return std::move(ir_);
  }

 private:
  Status error(const std::string& path, const std::string& what) const {
    return Status::error("json schema: ", path, ": ", what);
  }

  Result<Expr> compile(const OrderedJson& s, const std::string& path) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return json_.value_rule();
      return error(path, "schema false accepts nothing");
    }
    if (!s.is_object()) return error(path, "a schema must be an object or a boolean");
    std::vector<std::string> constraints;  // keywords that are not annotations
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (annotations().count(it.key())) continue;
      if (!handled().count(it.key())) return error(path, "unsupported keyword '" + it.key() + "'");
      constraints.push_back(it.key());
    }
    auto only = [&](const std::set<std::string>& allowed, const char* what) -> Status {
      for (const std::string& k : constraints) {
        if (!allowed.count(k))
          return error(path, "'" + k + "' beside '" + what + "' not supported");
      }
      return Status::ok();
    };
    if (s.contains("$ref")) {
      DSS_RETURN_IF_ERROR(only({"$ref"}, "$ref"));
      DSS_ASSIGN_OR_RETURN(int32_t rule, ref_rule(s["$ref"], path + "/$ref"));
      return Expr::ref(rule);
    }
    if (s.contains("allOf")) return compile_all_of(s, path);
    if (s.contains("anyOf") || s.contains("oneOf")) {
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      DSS_RETURN_IF_ERROR(only({key}, key));
      const OrderedJson& list = s[key];
      if (!list.is_array() || list.empty())
        return error(path, std::string(key) + " must be a non-empty array");
      std::vector<Expr> alts;
      for (size_t i = 0; i < list.size(); ++i) {
        DSS_ASSIGN_OR_RETURN(Expr e, compile(list[i], path + "/" + key + "/" + std::to_string(i)));
        alts.push_back(std::move(e));
      }
      return Expr::alt(std::move(alts));
    }
    DSS_ASSIGN_OR_RETURN(std::vector<std::string> types, types_of(s, path, constraints));
    if (s.contains("enum") || s.contains("const")) return compile_enum(s, path, types, only);
    if (types.empty()) return json_.value_rule();
    std::vector<Expr> alts;
    for (const std::string& t : types) {
      DSS_ASSIGN_OR_RETURN(Expr e, compile_type(s, path, t));
      alts.push_back(std::move(e));
    }
    return Expr::alt(std::move(alts));
  }

  // The types a schema generates: "type" (+ "nullable"), else inferred from its keywords.
  Result<std::vector<std::string>> types_of(const OrderedJson& s, const std::string& path,
                                            const std::vector<std::string>& constraints) {
    std::vector<std::string> types;
    if (s.contains("type")) {
      const OrderedJson& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const auto& x : t) {
          if (!x.is_string()) return error(path + "/type", "must be a string or strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        return error(path + "/type", "must be a string or a non-empty array of strings");
      }
      for (const std::string& x : types) {
        if (x != "string" && x != "number" && x != "integer" && x != "boolean" && x != "null" &&
            x != "object" && x != "array") {
          return error(path + "/type", "unknown type '" + x + "'");
        }
      }
    } else {
      auto uses = [&](const std::set<std::string>& keys) {
        for (const std::string& k : constraints) {
          if (keys.count(k)) return true;
        }
        return false;
      };
      if (uses(kObjectKeys)) types.push_back("object");
      if (uses(kArrayKeys)) types.push_back("array");
      if (uses(kStringKeys)) types.push_back("string");
      if (uses(kIntegerKeys)) types.push_back("integer");
    }
    if (s.contains("nullable")) {
      if (!s["nullable"].is_boolean()) return error(path + "/nullable", "must be a boolean");
      if (s["nullable"].get<bool>() && !types.empty()) types.push_back("null");
    }
    return types;
  }

  template <typename Only>
  Result<Expr> compile_enum(const OrderedJson& s, const std::string& path,
                            const std::vector<std::string>& types, const Only& only) {
    const bool is_enum = s.contains("enum");
    DSS_RETURN_IF_ERROR(only({"enum", "const", "type", "nullable"}, is_enum ? "enum" : "const"));
    std::vector<OrderedJson> values;
    if (is_enum) {
      if (!s["enum"].is_array()) return error(path + "/enum", "must be an array");
      for (const auto& v : s["enum"]) values.push_back(v);
    }
    if (s.contains("const")) values.push_back(s["const"]);
    std::vector<std::string> texts;
    for (const OrderedJson& v : values) {
      bool ok = types.empty();
      for (const std::string& t : types) ok = ok || type_matches(v, t);
      if (s.contains("const") && is_enum && v != s["const"]) ok = false;
      if (ok) texts.push_back(v.dump());
    }
    if (texts.empty()) return error(path, "no enum/const value satisfies the schema");
    return Expr::literals(std::move(texts));
  }

  Result<Expr> compile_type(const OrderedJson& s, const std::string& path, const std::string& t) {
    if (t == "null") return Expr::literal("null");
    if (t == "boolean") return Expr::alt({Expr::literal("true"), Expr::literal("false")});
    if (t == "string") return compile_string(s, path);
    if (t == "integer") return compile_integer(s, path);
    if (t == "number") {
      for (const std::string& k : kIntegerKeys) {
        if (s.contains(k)) return error(path, "'" + k + "' is supported for integers only");
      }
      return json_.number_rule();
    }
    if (t == "object") return compile_object(s, path);
    return compile_array(s, path);
  }

  Result<int32_t> count_keyword(const OrderedJson& s, const std::string& path, const char* key,
                                int32_t dflt) {
    if (!s.contains(key)) return dflt;
    const OrderedJson& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      return Status(error(path + "/" + key, "must be a non-negative integer"));
    }
    if (v.get<int64_t>() > kMaxSchemaLength) {
      return Status(
          error(path + "/" + key, "over " + std::to_string(kMaxSchemaLength) + " not supported"));
    }
    return static_cast<int32_t>(v.get<int64_t>());
  }

  Result<Expr> compile_string(const OrderedJson& s, const std::string& path) {
    const bool has_len = s.contains("minLength") || s.contains("maxLength");
    std::string regex;
    bool anchored = true;
    if (s.contains("pattern") || s.contains("format")) {
      if (s.contains("pattern") && s.contains("format"))
        return error(path, "'pattern' beside 'format' not supported");
      const char* key = s.contains("pattern") ? "pattern" : "format";
      if (has_len)
        return error(path, std::string("minLength/maxLength beside '") + key + "' not supported");
      if (!s[key].is_string()) return error(path + "/" + key, "must be a string");
      if (s.contains("pattern")) {
        regex = s["pattern"].get<std::string>();
        anchored = false;  // JSON Schema patterns match anywhere unless anchored
      } else {
        const std::string f = s["format"].get<std::string>();
        std::optional<std::string> r = string_format_regex(f);
        if (!r) return error(path + "/format", "unsupported format '" + f + "'");
        regex = *r;
      }
      Result<ParsedRegex> p = parse_regex(regex, &JsonRules::string_chars);
      if (!p) return error(path + "/" + key, p.message());
      std::vector<Expr> items = {Expr::byte('"')};
      if (!anchored && !p->anchored_start) items.push_back(Expr::star(json_.any_string_char()));
      items.push_back(std::move(p->expr));
      if (!anchored && !p->anchored_end) items.push_back(Expr::star(json_.any_string_char()));
      items.push_back(Expr::byte('"'));
      return Expr::seq(std::move(items));
    }
    if (!has_len) return json_.string_rule();
    DSS_ASSIGN_OR_RETURN(int32_t lo, count_keyword(s, path, "minLength", 0));
    DSS_ASSIGN_OR_RETURN(int32_t hi, count_keyword(s, path, "maxLength", kUnbounded));
    if (hi != kUnbounded && hi < lo) return error(path, "maxLength < minLength");
    return Expr::seq(
        {Expr::byte('"'), Expr::repeat(json_.any_string_char(), lo, hi), Expr::byte('"')});
  }

  Result<Expr> compile_integer(const OrderedJson& s, const std::string& path) {
    int64_t lo = -kMaxJsonInteger, hi = kMaxJsonInteger;
    bool bounded = false;
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const OrderedJson& v = s[k];
      if (!v.is_number()) return error(path + "/" + k, "must be a number");
      const double x = v.get<double>();
      if (std::fabs(x) > 1e18) return error(path + "/" + k, "out of the supported range");
      const std::string key = k;
      if (key == "minimum") lo = std::max(lo, static_cast<int64_t>(std::ceil(x)));
      if (key == "exclusiveMinimum") lo = std::max(lo, static_cast<int64_t>(std::floor(x)) + 1);
      if (key == "maximum") hi = std::min(hi, static_cast<int64_t>(std::floor(x)));
      if (key == "exclusiveMaximum") hi = std::min(hi, static_cast<int64_t>(std::ceil(x)) - 1);
      bounded = true;
    }
    if (!bounded) return json_.integer_rule();
    if (lo > hi) return error(path, "no integer satisfies the bounds");
    return int_range_expr(lo, hi);
  }

  Result<Expr> compile_object(const OrderedJson& s, const std::string& path) {
    static const OrderedJson kEmpty = OrderedJson::object();
    const OrderedJson& props = s.contains("properties") ? s["properties"] : kEmpty;
    if (!props.is_object()) return error(path + "/properties", "must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return error(path + "/required", "must be an array");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) return error(path + "/required", "must hold strings");
        if (!props.contains(r.get<std::string>())) {
          return error(path + "/required", "'" + r.get<std::string>() + "' is not in properties");
        }
        required.insert(r.get<std::string>());
      }
    }
    struct Member {
      Expr expr;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> names;
    for (auto it = props.begin(); it != props.end(); ++it) {
      DSS_ASSIGN_OR_RETURN(Expr v, compile(it.value(), path + "/properties/" + it.key()));
      members.push_back(
          {Expr::seq({Expr::literal(OrderedJson(it.key()).dump()), json_.colon(), std::move(v)}),
           required.count(it.key()) > 0});
      names.push_back(it.key());
    }
    // Extra members (additionalProperties), each with a key that is none of the declared names.
    std::optional<Expr> extra;
    if (s.contains("additionalProperties")) {
      const OrderedJson& ap = s["additionalProperties"];
      if (!ap.is_boolean() || ap.get<bool>()) {
        DSS_ASSIGN_OR_RETURN(Expr v, compile(ap, path + "/additionalProperties"));
        extra = Expr::seq(
            {Expr::byte('"'), other_key(names), Expr::byte('"'), json_.colon(), std::move(v)});
      }
    }
    // rest_i: members i.. after one was written; first_i: members i.. before any was written.
    const size_t n = members.size();
    Expr tail = extra ? Expr::star(Expr::seq({json_.comma(), *extra})) : Expr::empty();
    Expr rest = tail;
    Expr first = extra ? Expr::optional(Expr::seq({*extra, tail})) : Expr::empty();
    for (size_t i = n; i-- > 0;) {
      const int32_t rest_rule = ir_.new_rule("obj-rest");
      ir_.define(rest_rule, std::move(rest));
      const int32_t first_rule = ir_.new_rule("obj-first");
      ir_.define(first_rule, std::move(first));
      std::vector<Expr> r_alts = {
          Expr::seq({json_.comma(), members[i].expr, Expr::ref(rest_rule)})};
      std::vector<Expr> f_alts = {Expr::seq({members[i].expr, Expr::ref(rest_rule)})};
      if (!members[i].required) {
        r_alts.push_back(Expr::ref(rest_rule));
        f_alts.push_back(Expr::ref(first_rule));
      }
      rest = Expr::alt(std::move(r_alts));
      first = Expr::alt(std::move(f_alts));
    }
    return Expr::seq({Expr::byte('{'), std::move(first), Expr::byte('}')});
  }

  // Raw (unescaped) key text that is none of `names`: a walk of their trie by code point.
  Expr other_key(const std::vector<std::string>& names) {
    CodepointSet raw;
    raw.add(0x20, kMaxCodepoint);
    CodepointSet special;
    special.add('"');
    special.add('\\');
    raw = raw.minus(special);
    const int32_t any_rule = ir_.new_rule("key-any");
    ir_.define(any_rule, Expr::star(utf8_expr(raw)));
    return trie_key(names, "", raw, any_rule);
  }

  Expr trie_key(const std::vector<std::string>& names, const std::string& prefix,
                const CodepointSet& raw, int32_t any_rule) {
    bool terminal = false;
    std::map<uint32_t, bool> children;
    for (const std::string& name : names) {
      if (name.compare(0, prefix.size(), prefix) != 0) continue;
      if (name.size() == prefix.size()) {
        terminal = true;
        continue;
      }
      size_t i = prefix.size();
      uint32_t c;
      if (decode_utf8(name, i, c)) children[c] = true;
    }
    std::vector<Expr> alts;
    if (!terminal) alts.push_back(Expr::empty());
    CodepointSet others = raw;
    for (const auto& [c, _] : children) {
      if (!raw.contains(c)) continue;
      CodepointSet one;
      one.add(c);
      others = others.minus(one);
      std::string next = prefix;
      append_utf8(c, next);
      alts.push_back(Expr::seq({utf8_expr(one), trie_key(names, next, raw, any_rule)}));
    }
    alts.push_back(Expr::seq({utf8_expr(others), Expr::ref(any_rule)}));
    return Expr::alt(std::move(alts));
  }

  Result<Expr> compile_array(const OrderedJson& s, const std::string& path) {
    std::vector<Expr> prefix;
    if (s.contains("prefixItems")) {
      const OrderedJson& p = s["prefixItems"];
      if (!p.is_array()) return error(path + "/prefixItems", "must be an array");
      for (size_t i = 0; i < p.size(); ++i) {
        DSS_ASSIGN_OR_RETURN(Expr e, compile(p[i], path + "/prefixItems/" + std::to_string(i)));
        prefix.push_back(std::move(e));
      }
    }
    std::optional<Expr> item;
    if (s.contains("items")) {
      const OrderedJson& it = s["items"];
      if (!(it.is_boolean() && !it.get<bool>())) {
        if (it.is_array()) return error(path + "/items", "an array of schemas: use prefixItems");
        DSS_ASSIGN_OR_RETURN(Expr e, compile(it, path + "/items"));
        item = std::move(e);
      }
    } else if (prefix.empty()) {
      item = json_.value_rule();
    }
    DSS_ASSIGN_OR_RETURN(int32_t lo, count_keyword(s, path, "minItems", 0));
    DSS_ASSIGN_OR_RETURN(int32_t hi, count_keyword(s, path, "maxItems", kUnbounded));
    const auto n_p = static_cast<int32_t>(prefix.size());
    if (!item) hi = hi == kUnbounded ? n_p : std::min(hi, n_p);
    if (hi != kUnbounded && lo > hi) return error(path, "no array length satisfies the bounds");
    // Items after the prefix: (sep item){a,b}.
    Expr after = Expr::empty();
    if (item && (hi == kUnbounded || hi > n_p)) {
      const int32_t a = std::max(0, lo - n_p);
      const int32_t b = hi == kUnbounded ? kUnbounded : hi - n_p;
      const int32_t item_rule = ir_.new_rule("item");
      ir_.define(item_rule, std::move(*item));
      Expr with_comma = Expr::seq({json_.comma(), Expr::ref(item_rule)});
      if (n_p > 0) {
        after = Expr::repeat(std::move(with_comma), a, b);
      } else {
        Expr body =
            Expr::seq({Expr::ref(item_rule), Expr::repeat(std::move(with_comma), std::max(0, a - 1),
                                                          b == kUnbounded ? kUnbounded : b - 1)});
        after = a == 0 ? Expr::optional(std::move(body)) : std::move(body);
      }
    }
    // The prefix, which may stop early where minItems allows.
    Expr chain = std::move(after);
    for (int32_t i = std::min(n_p, hi == kUnbounded ? n_p : hi); i-- > 0;) {
      std::vector<Expr> parts;
      if (i > 0) parts.push_back(json_.comma());
      parts.push_back(std::move(prefix[i]));
      parts.push_back(std::move(chain));
      chain = Expr::seq(std::move(parts));
      if (i >= lo) chain = Expr::optional(std::move(chain));
    }
    return Expr::seq({Expr::byte('['), std::move(chain), Expr::byte(']')});
  }

  Result<Expr> compile_all_of(const OrderedJson& s, const std::string& path) {
    OrderedJson merged = OrderedJson::object();
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != "allOf") merged[it.key()] = it.value();
    }
    if (merged.contains("additionalProperties")) {
      return error(path, "'additionalProperties' beside 'allOf' not supported");
    }
    const OrderedJson& list = s["allOf"];
    if (!list.is_array() || list.empty())
      return error(path + "/allOf", "must be a non-empty array");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string mp = path + "/allOf/" + std::to_string(i);
      const OrderedJson* m = &list[i];
      for (int hops = 0; m->is_object() && m->contains("$ref"); ++hops) {
        if (hops > 32) return error(mp, "$ref chain too long");
        DSS_ASSIGN_OR_RETURN(m, resolve((*m)["$ref"], mp + "/$ref"));
      }
      if (!m->is_object()) return error(mp, "allOf members must be object schemas");
      for (auto it = m->begin(); it != m->end(); ++it) {
        const std::string& k = it.key();
        if (annotations().count(k)) continue;
        if (k == "properties") {
          if (!it.value().is_object()) return error(mp + "/properties", "must be an object");
          if (!merged.contains("properties")) merged["properties"] = OrderedJson::object();
          for (auto p = it.value().begin(); p != it.value().end(); ++p) {
            if (merged["properties"].contains(p.key())) {
              return error(mp, "property '" + p.key() + "' defined twice under allOf");
            }
            merged["properties"][p.key()] = p.value();
          }
        } else if (k == "required") {
          if (!merged.contains("required")) merged["required"] = OrderedJson::array();
          for (const auto& r : it.value()) merged["required"].push_back(r);
        } else if (k == "type") {
          if (it.value() != "object") return error(mp, "allOf members must be object schemas");
          merged["type"] = "object";
        } else {
          return error(mp, "'" + k + "' inside allOf not supported (only properties, required)");
        }
      }
    }
    return compile(merged, path);
  }

  Result<const OrderedJson*> resolve(const OrderedJson& ref, const std::string& path) {
    if (!ref.is_string()) return Status(error(path, "must be a string"));
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#')
      return Status(error(path, "only local references ('#...') are supported: '" + r + "'"));
    const OrderedJson* at = &root_;
    size_t i = 1;
    if (i < r.size() && r[i] != '/') return Status(error(path, "unresolved reference '" + r + "'"));
    while (i < r.size()) {
      size_t j = r.find('/', i + 1);
      if (j == std::string::npos) j = r.size();
      std::string tok;  // the pointer token with ~1 -> '/' and ~0 -> '~'
      for (size_t k = i + 1; k < j; ++k) {
        if (r[k] == '~' && k + 1 < j && (r[k + 1] == '0' || r[k + 1] == '1')) {
          tok += r[++k] == '1' ? '/' : '~';
        } else {
          tok += r[k];
        }
      }
      if (at->is_object() && at->contains(tok)) {
        at = &(*at)[tok];
      } else if (at->is_array() && !tok.empty() &&
                 tok.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(tok) < at->size()) {
        at = &(*at)[std::stoul(tok)];
      } else {
        return Status(error(path, "unresolved reference '" + r + "'"));
      }
      i = j;
    }
    return at;
  }

  Result<int32_t> ref_rule(const OrderedJson& ref, const std::string& path) {
    DSS_ASSIGN_OR_RETURN(const OrderedJson* target, resolve(ref, path));
    const std::string key = ref.get<std::string>();
    auto it = refs_.find(key);
    if (it != refs_.end()) return it->second;
    const int32_t rule = ir_.new_rule("ref");
    refs_.emplace(key, rule);
    DSS_ASSIGN_OR_RETURN(Expr e, compile(*target, key));
    ir_.define(rule, std::move(e));
    return rule;
  }

  const OrderedJson& root_;
  GrammarIr ir_;
  JsonRules json_;
  std::map<std::string, int32_t> refs_;
};

}  // namespace

Result<GrammarIr> json_schema_to_ir(const OrderedJson& schema, const JsonSchemaOptions& opts) {
  return SchemaCompiler(schema, opts.whitespace).run();
}

Result<GrammarIr> json_schema_to_ir(std::string_view schema_text, const JsonSchemaOptions& opts) {
  Result<OrderedJson> j = parse_json_bounded(schema_text, "json schema");
  if (!j) return j.status();
  return json_schema_to_ir(*j, opts);
}

GrammarIr json_object_ir(JsonWhitespace ws) {
  GrammarIr ir;
  JsonRules json(ir, ws);
  const int32_t r = ir.rule_id("root");
  ir.root = r;
  ir.define(r, json.object_rule());
  return ir;
}

}  // namespace dss::grammar
