// Structured-output request fields -> one OutputConstraint (kind, field, source), at most one per
// request; compile errors name the field and the grammar library's reason; the compiler's cache
// gives a repeated schema the same compiled grammar.
#include "server/output_constraint.h"

#include <gtest/gtest.h>

#include "grammar/token_vocab.h"
#include "server/api_error.h"

namespace dss {
namespace {

using Kind = OutputConstraint::Kind;

Result<OutputConstraint> parse(const std::string& body) {
  return parse_output_constraint(OrderedJson::parse(body));
}

std::string error_of(const std::string& body) {
  auto r = parse(body);
  EXPECT_FALSE(r) << body;
  return r ? "" : r.message();
}

TEST(OutputConstraint, EachFieldGivesItsKind) {
  auto none = parse(R"({"response_format": {"type": "text"}, "regex": null})");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->kind, Kind::kNone);
  auto js = parse(R"({"response_format": {"type": "json_schema", "json_schema":
      {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"b": {}, "a": {}}}}}})");
  ASSERT_TRUE(js) << js.message();
  EXPECT_EQ(js->kind, Kind::kJsonSchema);
  EXPECT_EQ(js->field, "response_format.json_schema.schema");
  EXPECT_EQ(js->source, R"({"type":"object","properties":{"b":{},"a":{}}})");  // order kept
  auto jo = parse(R"({"response_format": {"type": "json_object"}})");
  ASSERT_TRUE(jo);
  EXPECT_EQ(jo->kind, Kind::kJsonObject);
  auto so_json = parse(R"({"structured_outputs": {"json": "{\"type\": \"integer\"}"}})");
  ASSERT_TRUE(so_json);
  EXPECT_EQ(so_json->kind, Kind::kJsonSchema);
  EXPECT_EQ(so_json->source, R"({"type": "integer"})");
  auto so_choice = parse(R"({"structured_outputs": {"choice": ["a", "b c"]}})");
  ASSERT_TRUE(so_choice);
  EXPECT_EQ(so_choice->kind, Kind::kChoice);
  EXPECT_EQ(so_choice->choices, (std::vector<std::string>{"a", "b c"}));
  auto so_grammar = parse(R"({"structured_outputs": {"grammar": "root ::= \"x\""}})");
  ASSERT_TRUE(so_grammar);
  EXPECT_EQ(so_grammar->kind, Kind::kGrammar);
  auto regex = parse(R"({"regex": "[0-9]+"})");
  ASSERT_TRUE(regex);
  EXPECT_EQ(regex->kind, Kind::kRegex);
  EXPECT_EQ(regex->field, "regex");
  EXPECT_EQ(regex->source, "[0-9]+");
  auto ebnf = parse(R"({"ebnf": "root ::= \"x\""})");
  ASSERT_TRUE(ebnf);
  EXPECT_EQ(ebnf->kind, Kind::kGrammar);
  EXPECT_EQ(ebnf->field, "ebnf");
}

TEST(OutputConstraint, ShapeErrorsAndTwoConstraintsNameTheFields) {
  EXPECT_EQ(field_of_message(error_of(R"({"response_format": "json"})")), "response_format");
  EXPECT_EQ(field_of_message(error_of(R"({"response_format": {"type": "xml"}})")),
            "response_format.type");
  EXPECT_EQ(field_of_message(error_of(R"({"response_format": {"type": "json_schema"}})")),
            "response_format.json_schema");
  EXPECT_EQ(field_of_message(
                error_of(R"({"response_format": {"type": "json_schema", "json_schema": {}}})")),
            "response_format.json_schema.schema");
  EXPECT_EQ(field_of_message(error_of(R"({"regex": 5})")), "regex");
  EXPECT_EQ(field_of_message(error_of(R"({"structured_outputs": {"choice": []}})")),
            "structured_outputs.choice");
  EXPECT_EQ(field_of_message(error_of(R"({"structured_outputs": {"structural_tag": {}}})")),
            "structured_outputs.structural_tag");
  const std::string two = error_of(R"({"response_format": {"type": "json_object"},
      "structured_outputs": {"regex": "a"}, "ebnf": "root ::= \"a\""})");
  EXPECT_EQ(field_of_message(two), "response_format");
  EXPECT_NE(two.find("response_format, structured_outputs.regex and ebnf"), std::string::npos)
      << two;
}

TEST(OutputConstraint, CompileErrorsNameFieldAndKeywordAndTheCacheIsShared) {
  std::vector<std::pair<TokenId, std::string>> toks;
  for (int b = 0; b < 256; ++b) toks.emplace_back(b, std::string(1, static_cast<char>(b)));
  grammar::GrammarCompiler compiler(
      std::make_shared<const grammar::TokenVocab>(std::move(toks), 257, 256));
  auto c = parse(R"({"response_format": {"type": "json_schema", "json_schema":
      {"schema": {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}}}})");
  ASSERT_TRUE(c);
  auto g = compile_output_constraint(*c, compiler);
  ASSERT_FALSE(g);
  EXPECT_EQ(field_of_message(g.message()), "response_format.json_schema.schema");
  EXPECT_NE(g.message().find("ipv4"), std::string::npos) << g.message();
  auto bad_regex = parse(R"({"regex": "(a"})");
  ASSERT_TRUE(bad_regex);
  auto r = compile_output_constraint(*bad_regex, compiler);
  ASSERT_FALSE(r);
  EXPECT_EQ(field_of_message(r.message()), "regex");
  // The same schema text twice: one compiled grammar.
  auto s = parse(R"({"structured_outputs": {"json": {"type": "integer", "maximum": 9}}})");
  ASSERT_TRUE(s);
  auto g1 = compile_output_constraint(*s, compiler);
  auto g2 = compile_output_constraint(*s, compiler);
  ASSERT_TRUE(g1 && g2);
  EXPECT_EQ(g1->get(), g2->get());
  auto none = compile_output_constraint(OutputConstraint{}, compiler);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->get(), nullptr);
}

}  // namespace
}  // namespace dss
