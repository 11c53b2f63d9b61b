// parse_json_bounded and IndexedOrderedMap (io/json.h): the depth limit holds at any depth with
// the offending path named, wide objects parse in linear time, and OrderedJson keeps
// ordered_json's semantics (insertion order, first position / last value for duplicate keys).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "base/str_cat.h"
#include "io/json.h"

namespace dss {
namespace {

std::string nested_arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonBoundedTest, DepthAtTheLimitParses) {
  Result<OrderedJson> j = parse_json_bounded(nested_arrays(kMaxJsonDepth), "");
  ASSERT_TRUE(j) << j.message();
  EXPECT_TRUE(j->is_array());
}

TEST(JsonBoundedTest, DepthOverTheLimitNamesThePath) {
  const std::string body = R"({"model": "m", "tools": [{"type": "function", "function": )"
                           R"({"name": "f", "parameters": )" +
                           nested_arrays(11000) + "}}]}";
  Result<OrderedJson> j = parse_json_bounded(body, "");
  ASSERT_FALSE(j);
  EXPECT_EQ(j.message().rfind("tools[0].function.parameters[0][0]", 0), 0u) << j.message();
  EXPECT_NE(j.message().find("nested deeper than 128 levels"), std::string::npos) << j.message();
}

TEST(JsonBoundedTest, DocumentPrefixAndSyntaxErrors) {
  Result<OrderedJson> deep = parse_json_bounded(R"({"a": )" + nested_arrays(200) + "}", "args");
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.message().rfind("args.a[0]", 0), 0u) << deep.message();
  Result<OrderedJson> bad = parse_json_bounded(R"({"a": tru})", "");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.message().rfind("body: not valid JSON", 0), 0u) << bad.message();
  EXPECT_FALSE(parse_json_bounded("", ""));
  EXPECT_FALSE(parse_json_bounded(R"({"a": 1} x)", ""));
}

// Seconds to parse (best of 3) a body whose "ignored" object has n distinct keys.
double wide_parse_seconds(int n, OrderedJson* out = nullptr) {
  std::string body = R"({"ignored": {)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) body += ',';
    body += str_cat("\"k", i, "\":", i);
  }
  body += R"(}, "model": "m"})";
  double best = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    Result<OrderedJson> j = parse_json_bounded(body, "");
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_TRUE(j) << j.message();
    if (out && j) *out = std::move(j).value();
  }
  return best;
}

// Parse time grows linearly with an object's width: 4x the keys take ~4x the time (a linear key
// search, as nlohmann's ordered_map does, takes ~16x: 125k keys took 19.1 s there). A ratio, so
// it holds on slow sanitizer builds too.
TEST(JsonBoundedTest, WideObjectParsesInLinearTime) {
  OrderedJson wide;
  const double t_small = wide_parse_seconds(31250);
  const double t_large = wide_parse_seconds(125000, &wide);
  EXPECT_EQ(wide["ignored"].size(), 125000u);
  EXPECT_EQ(wide["ignored"]["k124999"].get<int>(), 124999);
  EXPECT_EQ(wide["model"], "m");
  EXPECT_LT(t_large / t_small, 8.0)
      << t_small << " s for 31,250 keys, " << t_large << " s for 125,000";
}

TEST(JsonBoundedTest, OrderedSemanticsKept) {
  std::string body = "{";
  for (int i = 40; i > 0; --i) body += str_cat("\"k", i, "\":", i, ",");
  body += R"("k7": "last"})";  // duplicate key: first position, last value
  Result<OrderedJson> j = parse_json_bounded(body, "");
  ASSERT_TRUE(j);
  ASSERT_EQ(j->size(), 40u);
  EXPECT_EQ(j->begin().key(), "k40");
  EXPECT_EQ((*j)["k7"], "last");
  int pos = 0;
  for (auto it = j->begin(); it != j->end(); ++it, ++pos)
    if (it.key() == "k7") break;
  EXPECT_EQ(pos, 33);

  OrderedJson copy = *j;
  EXPECT_EQ(copy, *j);
  copy.erase("k40");
  copy.erase(copy.find("k1"));
  EXPECT_EQ(copy.size(), 38u);
  EXPECT_FALSE(copy.contains("k40"));
  EXPECT_FALSE(copy.contains("k1"));
  for (int i = 2; i < 40; ++i) EXPECT_EQ(copy[str_cat("k", i)].is_number(), i != 7) << i;
  copy["new"] = 1;
  EXPECT_EQ(copy.size(), 39u);
  EXPECT_EQ((--copy.end()).key(), "new");
  EXPECT_EQ(j->size(), 40u);
  // Small objects (under the index threshold) behave the same.
  OrderedJson small = {{"b", 1}, {"a", 2}};
  small["b"] = 3;
  EXPECT_EQ(small.dump(), R"({"b":3,"a":2})");
}

}  // namespace
}  // namespace dss
