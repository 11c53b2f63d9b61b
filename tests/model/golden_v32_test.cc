// DeepSeek-V3.2 (lightning indexer, sparse MLA, FP8 latent simulation) against DeepSeek's
// reference (tests/data/golden/tiny-v32, official model.py after the indexer-RoPE fix, float32).
//
// The golden README warns that V3.2's e4m3 roundings feed top-k decisions, so a correct float32
// engine may legitimately diverge at fragile positions. What this test requires:
//   - cases of 1, 7 and 40 tokens: argmax at every position and the greedy continuation equal,
//     last-position logits within 1e-3;
//   - longer cases: argmax equal and the argmax logit within 2 x sensitivity["1e-06"] at every
//     prompt position before the first one whose sensitivity["1e-06"] exceeds 1e-2; any later
//     position that differs must follow a routing or indexer decision that differs from the
//     golden `decisions` where the golden margin is small (< 1e-2), i.e. an explained divergence.
// It also compares every decision (experts per MoE layer, selected positions per layer, golden
// entries <= t only, as the README instructs) and prints the agreement.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "io/json.h"
#include "model/runtime/model.h"
#include "model/runtime/sequence_runner.h"

namespace dss {
namespace {

const std::string kDir = std::string(DSS_TEST_DATA) + "/golden/tiny-v32";

int32_t argmax(const float* v, int32_t n) {
  int32_t b = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (v[i] > v[b]) b = i;
  }
  return b;
}

// Positions whose decisions differ from the golden's, with the golden margin of that decision.
struct DecisionDiff {
  int32_t pos;
  double margin;
};

std::vector<DecisionDiff> compare_decisions(const Json& decisions, const ForwardTrace& tr,
                                            int32_t n, int32_t& n_same, int32_t& n_total) {
  std::vector<DecisionDiff> diffs;
  const auto moe_layers = decisions["moe_layers"].get<std::vector<int32_t>>();
  const Json& d = decisions["prefill"];
  for (size_t li = 0; li < moe_layers.size(); ++li) {
    for (int32_t t = 0; t < n; ++t) {
      const auto want = d["experts"][li][t].get<std::vector<int32_t>>();
      ++n_total;
      if (tr.experts[static_cast<size_t>(moe_layers[li])][static_cast<size_t>(t)] == want) {
        ++n_same;
      } else {
        diffs.push_back({t, d["expert_margin"][li][t].get<double>()});
      }
    }
  }
  for (size_t layer = 0; layer < tr.index_sel.size(); ++layer) {
    for (int32_t t = 0; t < n; ++t) {
      std::vector<int32_t> want;
      for (int32_t p : d["index_topk"][layer][t].get<std::vector<int32_t>>()) {
        if (p <= t) want.push_back(p);  // entries > t are -inf ties: implementation-defined
      }
      ++n_total;
      if (tr.index_sel[layer][static_cast<size_t>(t)] == want) {
        ++n_same;
      } else {
        const Json& m = d["index_margin"][layer][t];
        diffs.push_back({t, m.is_null() ? 0.0 : m.get<double>()});
      }
    }
  }
  return diffs;
}

// with_decisions: also compare the routing and index decisions (a host backend's trace) and
// require every divergence after the first fragile position to follow a small-margin one.
void expect_v32_matches(const LoadOptions& opts, bool with_decisions) {
  auto model = Model::load(opts);
  ASSERT_TRUE(model.is_ok()) << model.message();
  const int32_t V = (*model)->config().n_vocab;
  auto j = load_json_file(kDir + "/golden.json");
  ASSERT_TRUE(j.is_ok());
  int64_t agree = 0, total = 0;
  int32_t dec_same = 0, dec_total = 0;
  for (const Json& c : (*j)["cases"]) {
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(name);
    const auto prompt = c["prompt"].get<std::vector<TokenId>>();
    const auto want_am = c["prompt_argmax"].get<std::vector<int32_t>>();
    const auto want_am_logit = c["prompt_argmax_logit"].get<std::vector<float>>();
    const auto sens = c["sensitivity"]["1e-06"]["prompt"].get<std::vector<float>>();
    const auto n = static_cast<int32_t>(prompt.size());
    SequenceRunner runner(**model, n + 8, 16, 512);
    ForwardTrace trace;
    if (with_decisions) runner.set_trace(&trace);
    std::vector<int32_t> am;
    std::vector<float> am_logit, last;
    runner.prefill(prompt, true, [&](int32_t, int32_t rows, const float* lg) {
      for (int32_t r = 0; r < rows; ++r) {
        const float* row = lg + static_cast<size_t>(r) * V;
        am.push_back(argmax(row, V));
        am_logit.push_back(row[am.back()]);
      }
      last.assign(lg + static_cast<size_t>(rows - 1) * V, lg + static_cast<size_t>(rows) * V);
    });
    runner.set_trace(nullptr);
    int32_t n_same = 0, n_total = 0;
    const auto diffs = with_decisions ? compare_decisions(c["decisions"], trace, n, n_same, n_total)
                                      : std::vector<DecisionDiff>{};
    dec_same += n_same;
    dec_total += n_total;
    int32_t first_fragile = n;
    for (int32_t t = 0; t < n; ++t) {
      if (sens[static_cast<size_t>(t)] > 1e-2f) {
        first_fragile = t;
        break;
      }
    }
    for (int32_t t = 0; t < n; ++t) {
      ++total;
      const bool same = am[static_cast<size_t>(t)] == want_am[static_cast<size_t>(t)];
      agree += same;
      const float tol = 2.0f * sens[static_cast<size_t>(t)];
      const bool close = std::abs(am_logit[static_cast<size_t>(t)] -
                                  want_am_logit[static_cast<size_t>(t)]) <= std::max(tol, 1e-5f);
      if (t < first_fragile) {
        EXPECT_TRUE(same) << "argmax differs at position " << t;
        EXPECT_TRUE(close) << "argmax logit differs at position " << t << ": "
                           << am_logit[static_cast<size_t>(t)] << " vs "
                           << want_am_logit[static_cast<size_t>(t)];
      } else if (with_decisions && (!same || !close)) {
        bool explained = false;
        for (const auto& dd : diffs) explained |= dd.pos <= t && dd.margin < 1e-2;
        EXPECT_TRUE(explained) << "unexplained divergence at position " << t;
      }
    }
    if (n <= 40) {
      EXPECT_EQ(am, want_am);
      float md = 0.0f;
      const auto want_last = c["last_logits"].get<std::vector<float>>();
      for (size_t i = 0; i < want_last.size(); ++i)
        md = std::max(md, std::abs(last[i] - want_last[i]));
      EXPECT_LE(md, 1e-3f);
      std::vector<int32_t> greedy = {am.back()};
      for (int s = 1; s < 8; ++s) greedy.push_back(argmax(runner.decode(greedy.back()), V));
      EXPECT_EQ(greedy, c["greedy"]["tokens"].get<std::vector<int32_t>>());
    }
    std::printf(
        "[ tiny-v32 ] %-6s prompt argmax %d/%d, decisions %d/%d equal, first fragile position %d\n",
        name.c_str(),
        static_cast<int>(std::inner_product(am.begin(), am.end(), want_am.begin(), 0, std::plus<>(),
                                            std::equal_to<>())),
        n, n_same, n_total, first_fragile);
  }
  std::printf("[ tiny-v32 ] overall prompt argmax agreement %lld/%lld, decisions %d/%d\n",
              static_cast<long long>(agree), static_cast<long long>(total), dec_same, dec_total);
}

TEST(GoldenV32, MatchesReferenceOrDivergesOnlyAtSmallMarginDecisions) {
  expect_v32_matches(LoadOptions{kDir}, true);
}

// --device cuda: the same float32 checks up to the first fragile position and on the short
// prompts (the decisions need a host trace). Skipped without a CUDA build and device.
TEST(GoldenV32, CudaMatchesReferenceUpToTheFirstFragilePosition) {
  if (!Model::cuda_available()) GTEST_SKIP() << "no CUDA build or device";
  LoadOptions opts{kDir};
  opts.device = Device::kCuda;
  expect_v32_matches(opts, false);
}

}  // namespace
}  // namespace dss
