// StopStringMatcher: hand-checked cases, then the property that any split of the text into
// deltas gives the same emitted text and stop decision as one delta.
#include "text/stop_string_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dss {
namespace {

struct MatchRun {
  std::string text;
  bool stopped = false;
  int32_t i_stop = -1;
};

MatchRun run(const std::vector<std::string>& stops, bool include,
             const std::vector<std::string>& deltas) {
  StopStringMatcher m(stops, include);
  MatchRun r;
  for (const std::string& d : deltas) {
    const StopFeedResult f = m.feed(d);
    r.text += f.text;
    r.stopped = f.stopped;
  }
  r.text += m.finish();
  r.i_stop = m.i_stop();
  return r;
}

TEST(StopStringMatcher, TruncatesBeforeTheStopString) {
  const MatchRun r = run({"END"}, false, {"hello E", "N", "D world"});
  EXPECT_EQ(r.text, "hello ");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.i_stop, 0);
}

TEST(StopStringMatcher, IncludesTheStopStringWhenAsked) {
  EXPECT_EQ(run({"END"}, true, {"hello EN", "D world"}).text, "hello END");
}

TEST(StopStringMatcher, HoldsBackOnlyAPossibleStart) {
  StopStringMatcher m({"abc"}, false);
  StopFeedResult f = m.feed("xxab");  // "ab" may start "abc"
  EXPECT_EQ(f.text, "xx");
  EXPECT_FALSE(f.stopped);
  f = m.feed("d");  // "abd" cannot: released
  EXPECT_EQ(f.text, "abd");
  f = m.feed("a");
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(m.finish(), "a");  // end of generation flushes the held tail
}

TEST(StopStringMatcher, NothingAfterStop) {
  StopStringMatcher m({"\n\n"}, false);
  EXPECT_EQ(m.feed("a\n\nb").text, "a");
  const StopFeedResult f = m.feed("more");
  EXPECT_TRUE(f.stopped);
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(m.finish(), "");
}

TEST(StopStringMatcher, EarliestEndingStopWins) {
  // "b" ends at byte 3 of "xabc", before "abc" (ends at 4): a byte stream sees "b" first.
  const MatchRun r = run({"abc", "b"}, false, {"xabc"});
  EXPECT_EQ(r.text, "xa");
  EXPECT_EQ(r.i_stop, 1);
  // Same end: the longer (earlier-starting) one.
  EXPECT_EQ(run({"c", "bc"}, true, {"abcd"}).text, "abc");
  EXPECT_EQ(run({"c", "bc"}, false, {"abcd"}).text, "a");
}

TEST(StopStringMatcher, MultiByteUtf8StopString) {
  // "。" is E3 80 82; a held-back tail never splits it or the text before it.
  const MatchRun r = run({"。"}, false, {"你好", "。再见"});
  EXPECT_EQ(r.text, "你好");
  EXPECT_TRUE(r.stopped);
}

TEST(StopStringMatcher, NoStopsPassesEverythingThrough) {
  EXPECT_EQ(run({}, false, {"a", "b"}).text, "ab");
  EXPECT_EQ(run({""}, false, {"a", "b"}).text, "ab");  // empty stop strings are ignored
}

// Splitting the text at any one or two byte positions, or byte by byte, changes nothing.
TEST(StopStringMatcher, EverySplitMatchesUnsplit) {
  const std::vector<std::vector<std::string>> stop_sets = {
      {"END"}, {"abc", "b"}, {"aab"}, {"。", "好。"}, {"xyz"}, {"<|end|>", "|e"}};
  const std::vector<std::string> texts = {"hello END tail", "xabcab",    "aaab",   "你好。再见",
                                          "no stop here x", "aa<|end|>", "ENDEND", "EN",
                                          "aaaab"};
  int n_checked = 0;
  for (const auto& stops : stop_sets) {
    for (const bool include : {false, true}) {
      for (const std::string& text : texts) {
        const MatchRun whole = run(stops, include, {text});
        std::vector<std::string> bytes;
        for (const char c : text) bytes.emplace_back(1, c);
        const MatchRun by_byte = run(stops, include, bytes);
        EXPECT_EQ(by_byte.text, whole.text) << text;
        EXPECT_EQ(by_byte.i_stop, whole.i_stop) << text;
        for (size_t i = 0; i <= text.size(); ++i) {
          for (size_t j = i; j <= text.size(); ++j) {
            const MatchRun split =
                run(stops, include, {text.substr(0, i), text.substr(i, j - i), text.substr(j)});
            EXPECT_EQ(split.text, whole.text) << text << " split " << i << "," << j;
            EXPECT_EQ(split.stopped, whole.stopped);
            ++n_checked;
          }
        }
        // Emitted text is the input cut at the stop (or all of it): a prefix of the input.
        EXPECT_EQ(text.compare(0, whole.text.size(), whole.text), 0) << text;
      }
    }
  }
  EXPECT_GT(n_checked, 1000);
}

}  // namespace
}  // namespace dss
