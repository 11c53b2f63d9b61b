// SSE framing and the folding of streamed chunks into a request timeline (apps/bench).
#include <gtest/gtest.h>

#include <cmath>

#include "apps/bench/arrivals.h"
#include "apps/bench/prom_text.h"
#include "apps/bench/sse_parser.h"
#include "apps/bench/stream_timeline.h"

namespace dss::bench {
namespace {

TEST(SseParser, SplitsEventsAcrossPieces) {
  SseParser p;
  auto a = p.feed("data: {\"a\":1}\n\nda");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], "{\"a\":1}");
  auto b = p.feed("ta: [DONE]\r\n\r\n: comment\n\n");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0], "[DONE]");
  auto c = p.feed("data: x\ndata: y\n\n");  // multi-line data joins with '\n'
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "x\ny");
}

// start 1.0; role chunk (no output) 1.05; reasoning 1.10 (TTFT 0.10); content "ab" 1.15
// (gap 0.05); tool call 1.30 (gap 0.15); finish chunk 1.31 (no output); usage 1.32 (E2E 0.32).
TEST(StreamTimeline, ChatChannelsAndUsage) {
  StreamTimeline tl(1.0, 5);
  tl.on_event(1.05, R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})");
  tl.on_event(1.10, R"({"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]})");
  tl.on_event(1.15, R"({"choices":[{"index":0,"delta":{"content":"ab"}}]})");
  tl.on_event(1.30, R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]})");
  tl.on_event(1.31, R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})");
  tl.on_event(1.32, R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9}})");
  tl.on_event(1.33, "[DONE]");
  const RequestRecord r = tl.finish();
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_NEAR(r.ttft, 0.10, 1e-12);
  ASSERT_EQ(r.itl.size(), 2u);
  EXPECT_NEAR(r.itl[0], 0.05, 1e-12);
  EXPECT_NEAR(r.itl[1], 0.15, 1e-12);
  EXPECT_NEAR(r.latency, 0.32, 1e-12);
  EXPECT_EQ(r.n_output_chunks, 3);
  EXPECT_EQ(r.output_tokens, 9);  // usage, not the 3 chunks
  EXPECT_EQ(r.prompt_len, 12);
  EXPECT_EQ(r.generated_text, "hmab");
}

TEST(StreamTimeline, CompletionsWithoutUsageCountsChunks) {
  StreamTimeline tl(0.0, 7);
  tl.on_event(0.5, R"({"choices":[{"index":0,"text":"x"}]})");
  tl.on_event(0.6, R"({"choices":[{"index":0,"text":""}]})");  // no output
  tl.on_event(0.7, R"({"choices":[{"index":0,"text":"yz"}]})");
  tl.on_event(0.8, "[DONE]");
  const RequestRecord r = tl.finish();
  ASSERT_TRUE(r.success);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.prompt_len, 7);
  EXPECT_NEAR(r.itl.at(0), 0.2, 1e-12);
  EXPECT_NEAR(r.latency, 0.7, 1e-12);
}

TEST(StreamTimeline, Failures) {
  {
    StreamTimeline tl(0, 1);
    tl.on_event(0.1, R"({"choices":[{"index":0,"text":"x"}]})");
    EXPECT_FALSE(tl.finish().success);  // no [DONE]
  }
  {
    StreamTimeline tl(0, 1);
    tl.on_event(0.1, R"({"error":{"message":"boom"}})");
    tl.on_event(0.2, "[DONE]");
    const RequestRecord r = tl.finish();
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("boom"), std::string::npos);
  }
  {
    StreamTimeline tl(0, 1);
    tl.on_event(0.1, "{not json");
    EXPECT_FALSE(tl.finish().success);
  }
  {
    StreamTimeline tl(0, 1);
    tl.on_event(0.2, "[DONE]");
    EXPECT_FALSE(tl.finish().success);  // no output chunk at all
  }
  {
    StreamTimeline tl(0, 1);
    tl.fail("HTTP status 400");
    EXPECT_EQ(tl.finish().error, "HTTP status 400");
  }
}

TEST(Arrivals, PoissonIsSeededAndHasTheRate) {
  const auto a = poisson_arrivals(4000, 8.0, 3);
  EXPECT_EQ(a, poisson_arrivals(4000, 8.0, 3));
  EXPECT_EQ(a[0], 0.0);
  // 3999 exponential gaps of mean 1/8 s: sum ~ 500 s, sd sqrt(3999)/8 ~ 7.9 s; allow 5 sd.
  EXPECT_NEAR(a.back(), 3999 / 8.0, 40);
  for (size_t i = 1; i < a.size(); ++i) ASSERT_GE(a[i], a[i - 1]);
  for (double t : poisson_arrivals(5, INFINITY, 1)) EXPECT_EQ(t, 0.0);
}

TEST(PromText, UnlabelledSample) {
  const char* text =
      "# TYPE dsserve:engine_busy_seconds_total counter\n"
      "dsserve:engine_busy_seconds_total_x 9\n"
      "dsserve:engine_busy_seconds_total 12.5\n";
  EXPECT_EQ(prom_sample(text, "dsserve:engine_busy_seconds_total"), 12.5);
  EXPECT_FALSE(prom_sample(text, "dsserve:missing").has_value());
}

}  // namespace
}  // namespace dss::bench
