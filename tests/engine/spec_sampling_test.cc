// Speculative decoding leaves the sampling distribution unchanged (issue #39 acceptance): for a
// fixed prompt, the first 3 generated tokens of N seeded requests with drafting and of N
// requests without it (different seeds: two independent samples) are compared by a
// chi-square test of homogeneity over the observed token triples; the test fails at p <= 0.01.
// The drafter is the MTP module of a tiny random checkpoint, whose drafts are almost never
// accepted (the rejection path); engine_test's NgramSpeculativeSampledEqualsPlainPerSeed covers
// accepted drafts under sampling (the same tokens per seed as without drafting).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "engine/engine.h"
#include "engine/event_collector.h"
#include "model/deepseek/random_checkpoint.h"

namespace dss {
namespace {

// 20,000 per arm as the issue states it (`make spec-sampling-check`); `make test` runs 4,000
// (DSS_SPEC_SAMPLING_REQUESTS overrides).
const int kRequests = [] {
  const char* v = std::getenv("DSS_SPEC_SAMPLING_REQUESTS");
  return v != nullptr ? std::atoi(v) : 4000;
}();

// Q(a, x) = Gamma(a, x) / Gamma(a), the chi-square upper tail at x = chi2 / 2, a = df / 2: the
// series for x < a + 1, else the continued fraction (modified Lentz), to 1e-12.
double gamma_q(double a, double x) {
  if (x <= 0.0) return 1.0;
  const double log_front = -x + a * std::log(x) - std::lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 1000 && std::fabs(term) > 1e-14 * std::fabs(sum); ++n) {
      term *= x / (a + n);
      sum += term;
    }
    return 1.0 - sum * std::exp(log_front);
  }
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 1000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    d = std::fabs(d) < tiny ? tiny : d;
    c = b + an / c;
    c = std::fabs(c) < tiny ? tiny : c;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < 1e-14) break;
  }
  return std::exp(log_front) * h;
}

TEST(ChiSquare, UpperTailMatchesKnownQuantiles) {
  // Textbook critical values: P(chi2_df > x) = 0.05 at (1, 3.841), (10, 18.307), (50, 67.505).
  EXPECT_NEAR(gamma_q(0.5, 3.841 / 2), 0.05, 1e-4);
  EXPECT_NEAR(gamma_q(5.0, 18.307 / 2), 0.05, 1e-4);
  EXPECT_NEAR(gamma_q(25.0, 67.505 / 2), 0.05, 1e-4);
  EXPECT_NEAR(gamma_q(5.0, 23.209 / 2), 0.01, 1e-4);
}

using Triple = std::array<TokenId, 3>;

// The first 3 tokens of kRequests requests of `prompt` with seeds seed0, seed0 + 1, ...
std::map<Triple, int> triples(const EngineOptions& o, const std::vector<TokenId>& prompt,
                              float temperature, int32_t top_k, uint64_t seed0,
                              EngineStats* stats) {
  auto e = Engine::create(o);
  EXPECT_TRUE(e.is_ok()) << e.message();
  if (!e.is_ok()) return {};
  EventCollector col;
  std::vector<RequestId> ids;
  for (int i = 0; i < kRequests; ++i) {
    GenerateRequest r;
    r.prompt = prompt;
    r.params.temperature = temperature;
    r.params.top_k = top_k;
    r.params.seed = seed0 + static_cast<uint64_t>(i);
    r.params.max_tokens = 3;
    r.params.ignore_eos = true;
    auto id = (*e)->submit(std::move(r), col.sink());
    EXPECT_TRUE(id.is_ok()) << id.message();
    ids.push_back(*id);
  }
  col.wait_done(kRequests);
  std::map<Triple, int> out;
  for (RequestId id : ids) {
    const auto t = col.get(id).tokens;
    EXPECT_EQ(t.size(), 3u);
    if (t.size() == 3) out[{t[0], t[1], t[2]}]++;
  }
  *stats = (*e)->stats();
  return out;
}

// Chi-square test of homogeneity of two equal-sized samples; triples expected fewer than 5
// times in either are pooled into one bin. Returns the p-value.
double homogeneity_p(const std::map<Triple, int>& a, const std::map<Triple, int>& b, int* df) {
  std::map<Triple, std::pair<int, int>> both;
  for (const auto& [k, n] : a) both[k].first += n;
  for (const auto& [k, n] : b) both[k].second += n;
  std::vector<std::pair<int, int>> bins;
  std::pair<int, int> pooled{0, 0};
  for (const auto& [k, n] : both) {
    if ((n.first + n.second) / 2.0 < 5.0) {
      pooled.first += n.first;
      pooled.second += n.second;
    } else {
      bins.push_back(n);
    }
  }
  if (pooled.first + pooled.second > 0) bins.push_back(pooled);
  double chi2 = 0.0;
  for (const auto& [x, y] : bins) {
    const double e = (x + y) / 2.0;  // equal sample sizes
    chi2 += (x - e) * (x - e) / e + (y - e) * (y - e) / e;
  }
  *df = static_cast<int>(bins.size()) - 1;
  return gamma_q(*df / 2.0, chi2 / 2.0);
}

void same_distribution(EngineOptions o, const std::vector<TokenId>& prompt, float temperature,
                       int32_t top_k, SpecAlgorithm algorithm) {
  o.max_running_requests = 256;
  o.chunked_prefill_size = 2048;
  o.context_length = 64;
  o.kv_cache_memory_bytes = 64 << 20;
  o.matmul_dtype = MatmulDType::kF32;
  EngineStats plain_stats, spec_stats;
  const auto plain = triples(o, prompt, temperature, top_k, 1, &plain_stats);
  o.speculative.algorithm = algorithm;
  o.speculative.num_steps = 2;
  const auto spec = triples(o, prompt, temperature, top_k, 1 + kRequests, &spec_stats);
  int df = 0;
  const double p = homogeneity_p(plain, spec, &df);
  std::printf(
      "chi-square homogeneity: %d triple bins, df %d, p = %.4f; %lld drafts, %lld of %lld "
      "draft tokens accepted\n",
      df + 1, df, p, static_cast<long long>(spec_stats.spec.drafts),
      static_cast<long long>(spec_stats.spec.accepted_tokens),
      static_cast<long long>(spec_stats.spec.draft_tokens));
  EXPECT_GT(df, 5) << "too few categories to test anything";
  EXPECT_GT(p, 0.01) << "the first 3 tokens are distributed differently with drafting";
  EXPECT_GT(spec_stats.spec.drafts, kRequests / 2);
  EXPECT_GT(spec_stats.spec_draft_seconds, 0.0);
}

TEST(SpeculativeSampling, MtpKeepsTheDistribution) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dss-spec-sampling-" + std::to_string(::getpid()));
  Json cfg = preset_config("tiny").value();
  cfg["vocab_size"] = 1000;
  cfg["num_nextn_predict_layers"] = 1;
  RandomCheckpointOptions ro;
  ro.out_dir = dir.string();
  ro.seed = 5;
  ASSERT_TRUE(write_random_checkpoint(cfg, ro).is_ok());
  EngineOptions o;
  o.model_dir = dir.string();
  same_distribution(o, {3, 14, 15, 92, 65, 35, 89, 79}, 1.0f, 4, SpecAlgorithm::kNextn);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dss
