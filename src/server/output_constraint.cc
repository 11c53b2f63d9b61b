#include "server/output_constraint.h"

#include <utility>

#include "base/str_cat.h"

namespace dss {

namespace {

using Kind = OutputConstraint::Kind;

Status read_response_format(const OrderedJson& rf, std::vector<OutputConstraint>& found) {
  if (!rf.is_object()) return Status::error("response_format: must be an object");
  auto t = rf.find("type");
  if (t == rf.end() || !t->is_string())
    return Status::error("response_format.type: must be text, json_object or json_schema");
  const std::string type = t->get<std::string>();
  if (type == "text") return Status::ok();
  if (type == "json_object") {
    found.push_back(OutputConstraint{Kind::kJsonObject, "response_format", "", {}});
    return Status::ok();
  }
  if (type != "json_schema")
    return Status::error("response_format.type: must be text, json_object or json_schema, got '",
                         type, "'");
  auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object())
    return Status::error("response_format.json_schema: must be an object with a schema");
  if (auto n = js->find("name"); n != js->end() && !n->is_null() && !n->is_string())
    return Status::error("response_format.json_schema.name: must be a string");
  if (auto s = js->find("strict"); s != js->end() && !s->is_null() && !s->is_boolean())
    return Status::error("response_format.json_schema.strict: must be true or false");
  auto schema = js->find("schema");
  if (schema == js->end() || schema->is_null())
    return Status::error("response_format.json_schema.schema: missing");
  if (!schema->is_object() && !schema->is_boolean())
    return Status::error("response_format.json_schema.schema: must be a JSON Schema object");
  found.push_back(OutputConstraint{
      Kind::kJsonSchema, "response_format.json_schema.schema", schema->dump(), {}});
  return Status::ok();
}

Status read_string_field(const OrderedJson& v, const std::string& field, Kind kind,
                         std::vector<OutputConstraint>& found) {
  if (!v.is_string()) return Status::error(field, ": must be a string");
  found.push_back(OutputConstraint{kind, field, v.get<std::string>(), {}});
  return Status::ok();
}

Status read_structured_outputs(const OrderedJson& so, std::vector<OutputConstraint>& found) {
  if (!so.is_object()) return Status::error("structured_outputs: must be an object");
  for (const char* unsupported : {"structural_tag", "whitespace_pattern"}) {
    auto it = so.find(unsupported);
    if (it != so.end() && !it->is_null())
      return Status::error("structured_outputs.", unsupported, ": not supported");
  }
  if (auto it = so.find("json"); it != so.end() && !it->is_null()) {
    if (it->is_string()) {
      found.push_back(OutputConstraint{
          Kind::kJsonSchema, "structured_outputs.json", it->get<std::string>(), {}});
    } else if (it->is_object() || it->is_boolean()) {
      found.push_back(
          OutputConstraint{Kind::kJsonSchema, "structured_outputs.json", it->dump(), {}});
    } else {
      return Status::error("structured_outputs.json: must be a JSON Schema (object or text)");
    }
  }
  if (auto it = so.find("regex"); it != so.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(read_string_field(*it, "structured_outputs.regex", Kind::kRegex, found));
  if (auto it = so.find("grammar"); it != so.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(
        read_string_field(*it, "structured_outputs.grammar", Kind::kGrammar, found));
  if (auto it = so.find("choice"); it != so.end() && !it->is_null()) {
    if (!it->is_array() || it->empty())
      return Status::error("structured_outputs.choice: must be a non-empty list of strings");
    OutputConstraint c{Kind::kChoice, "structured_outputs.choice", "", {}};
    for (const auto& e : *it) {
      if (!e.is_string())
        return Status::error("structured_outputs.choice: must be a non-empty list of strings");
      c.choices.push_back(e.get<std::string>());
    }
    found.push_back(std::move(c));
  }
  if (auto it = so.find("json_object"); it != so.end() && !it->is_null()) {
    if (!it->is_boolean())
      return Status::error("structured_outputs.json_object: must be a boolean");
    if (it->get<bool>())
      found.push_back(
          OutputConstraint{Kind::kJsonObject, "structured_outputs.json_object", "", {}});
  }
  return Status::ok();
}

}  // namespace

Result<OutputConstraint> parse_output_constraint(const OrderedJson& body) {
  std::vector<OutputConstraint> found;
  if (auto it = body.find("response_format"); it != body.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(read_response_format(*it, found));
  if (auto it = body.find("structured_outputs"); it != body.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(read_structured_outputs(*it, found));
  if (auto it = body.find("regex"); it != body.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(read_string_field(*it, "regex", Kind::kRegex, found));
  if (auto it = body.find("ebnf"); it != body.end() && !it->is_null())
    DSS_RETURN_IF_ERROR(read_string_field(*it, "ebnf", Kind::kGrammar, found));
  if (found.empty()) return OutputConstraint{};
  if (found.size() > 1) {
    std::string names;
    for (size_t i = 0; i < found.size(); ++i)
      names += (i == 0 ? "" : i + 1 == found.size() ? " and " : ", ") + found[i].field;
    return Status::error(found[0].field, ": at most one output constraint per request, got ",
                         names);
  }
  return std::move(found[0]);
}

Result<std::shared_ptr<grammar::CompiledGrammar>> compile_output_constraint(
    const OutputConstraint& c, grammar::GrammarCompiler& compiler) {
  grammar::GrammarCompiler::Compiled g = std::shared_ptr<grammar::CompiledGrammar>();
  switch (c.kind) {
    case Kind::kNone:
      return std::shared_ptr<grammar::CompiledGrammar>();
    case Kind::kJsonObject:
      g = compiler.json_object();
      break;
    case Kind::kJsonSchema:
      g = compiler.json_schema(c.source);
      break;
    case Kind::kRegex:
      g = compiler.regex(c.source);
      break;
    case Kind::kChoice:
      g = compiler.choice(c.choices);
      break;
    case Kind::kGrammar:
      g = compiler.gbnf(c.source);
      break;
  }
  if (!g) return Status::error(c.field, ": ", g.status().message());
  return g;
}

}  // namespace dss
