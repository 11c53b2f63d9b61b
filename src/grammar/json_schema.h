// JSON Schema -> grammar IR, for structured outputs (response_format json_schema, tool
// arguments).
//
// Supported: type (string, number, integer, boolean, null, object, array; arrays of types;
// OpenAPI "nullable"), properties (emitted in declared order), required, additionalProperties
// (false, true or a schema), items, prefixItems, minItems/maxItems, enum, const, anyOf, oneOf
// (treated as anyOf: the schema author keeps the branches disjoint), allOf of object schemas
// (merged), $ref to "#" or a JSON pointer into the document ($defs, definitions; recursion
// allowed), minLength/maxLength, pattern, minimum/maximum/exclusiveMinimum/exclusiveMaximum for
// integers, format date/time/date-time/email/uuid (string_formats.h). Annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// accepted and have no effect. Any other keyword is an error naming it and the schema path.
//
// Strict-mode defaults, as xgrammar's strict mode and OpenAI's structured outputs: an object
// without additionalProperties allows no other properties; an array with prefixItems and no
// items allows no items past them. Optional properties may be left out; the ones present keep the
// declared order. A schema without type that uses keywords of one type (properties, items,
// minLength, ...) generates that type only; one with none generates any JSON value.
// Whitespace: json_rules.h (kCompact by default).
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/expr.h"
#include "grammar/json_rules.h"
#include "io/json.h"

namespace dss::grammar {

struct JsonSchemaOptions {
  JsonWhitespace whitespace = JsonWhitespace::kCompact;
};

inline constexpr int32_t kMaxSchemaLength = 4096;  // largest maxLength / maxItems accepted

// Errors: "json schema: #/properties/x: unsupported keyword 'not'", "json schema: not valid
// JSON (...)", "json schema: #/$ref: unresolved reference '#/$defs/y'".
Result<GrammarIr> json_schema_to_ir(std::string_view schema_text, const JsonSchemaOptions& opts);
Result<GrammarIr> json_schema_to_ir(const OrderedJson& schema, const JsonSchemaOptions& opts);
// Any JSON object (response_format {"type": "json_object"}).
GrammarIr json_object_ir(JsonWhitespace ws);

}  // namespace dss::grammar
