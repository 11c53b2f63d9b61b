#include "sample/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>

#include "base/check.h"
#include "sample/logits_processors.h"

namespace dss {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

Sampler::Sampler(int32_t n_vocab) : n_vocab_(n_vocab) {
  DSS_CHECK(n_vocab > 0, "n_vocab=", n_vocab);
  work_.resize(static_cast<size_t>(n_vocab));
  candidates_.reserve(static_cast<size_t>(n_vocab));
}

TokenId Sampler::argmax() const {
  // First maximum; NaN never compares greater, so it is never chosen.
  size_t best = 0;
  for (size_t i = 1; i < work_.size(); ++i)
    if (work_[i] > work_[best]) best = i;
  DSS_CHECK(work_[best] > kNegInf, "no finite logit left to choose from");
  return static_cast<TokenId>(best);
}

// Disallowed tokens -> -inf. A word of all ones (most of a free-text mask) is skipped whole.
void Sampler::apply_mask(std::span<const uint64_t> allowed) {
  DSS_CHECK(allowed.size() == static_cast<size_t>(n_mask_words()), "mask words=", allowed.size(),
            " want ", n_mask_words());
  const auto n = static_cast<size_t>(n_vocab_);
  const size_t n_full = n / 64;  // words covering 64 ids each
  float* work = work_.data();
  for (size_t w = 0; w < n_full; ++w) {
    const uint64_t bits = allowed[w];
    if (bits == ~uint64_t{0}) continue;
    float* x = work + w * 64;
    if (bits == 0) {
      std::fill(x, x + 64, kNegInf);
      continue;
    }
    // Only the disallowed ids of a mixed word are visited (one ctz each): a structured-output
    // mask is mostly whole words, and where mixed (free string content) mostly allowed.
    for (uint64_t off = ~bits; off != 0; off &= off - 1) x[std::countr_zero(off)] = kNegInf;
  }
  for (size_t t = n_full * 64; t < n; ++t)
    if (((allowed[n_full] >> (t & 63)) & 1) == 0) work[t] = kNegInf;
}

bool Sampler::min_tokens_empties_mask(std::span<const uint64_t> allowed,
                                      const SamplingParams& params, TokenId eos_token) const {
  auto is_allowed = [&](TokenId t) {
    return t >= 0 && t < n_vocab_ && ((allowed[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1);
  };
  int64_t n_allowed = 0;
  for (const uint64_t w : allowed) n_allowed += std::popcount(w);
  // Distinct allowed ids that min_tokens would suppress (stop ids may repeat or include EOS).
  int64_t n_suppressed = 0;
  const std::vector<TokenId>& stops = params.stop_token_ids;
  for (size_t i = 0; i < stops.size(); ++i) {
    const bool dup = std::find(stops.begin(), stops.begin() + static_cast<std::ptrdiff_t>(i),
                               stops[i]) != stops.begin() + static_cast<std::ptrdiff_t>(i);
    if (!dup && is_allowed(stops[i])) ++n_suppressed;
  }
  if (!params.ignore_eos && is_allowed(eos_token) &&
      std::find(stops.begin(), stops.end(), eos_token) == stops.end())
    ++n_suppressed;
  return n_suppressed >= n_allowed;
}

namespace {

// Descending by logit, ties by lower id: the order top-p walks.
bool ranks_before(const Sampler::Candidate& a, const Sampler::Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

double total_prob(std::span<const Sampler::Candidate> cands) {
  double total = 0.0;
  for (const Sampler::Candidate& c : cands) total += c.prob;
  return total;
}

}  // namespace

// Keeps the tokens whose preceding mass (in ranks_before order) is < top_p * total, i.e. the
// smallest top set reaching top_p, boundary token included. Instead of sorting everything, it
// buckets candidates by logit distance from the maximum, finds the bucket where the running mass
// crosses the target, and sorts only that bucket: O(n + bucket log bucket).
void Sampler::keep_top_p(float top_p, float max_logit) {
  const double target = static_cast<double>(top_p) * total_prob(candidates_);
  if (candidates_.size() <= 256) {
    std::sort(candidates_.begin(), candidates_.end(), ranks_before);
    double before = 0.0;
    size_t n_keep = 0;
    while (n_keep < candidates_.size() && before < target) before += candidates_[n_keep++].prob;
    candidates_.resize(n_keep);
    return;
  }
  // Bucket 0 holds the maximum; the last bucket everything 32 or more below it (p < 1.3e-14).
  constexpr int32_t kNBuckets = 2048;
  constexpr float kRange = 32.0f;
  constexpr float kScale = kNBuckets / kRange;
  auto bucket_of = [&](float logit) {
    const float d = (max_logit - logit) * kScale;
    return d >= static_cast<float>(kNBuckets - 1) ? kNBuckets - 1 : static_cast<int32_t>(d);
  };
  bucket_mass_.assign(kNBuckets, 0.0);
  for (const Candidate& c : candidates_)
    bucket_mass_[static_cast<size_t>(bucket_of(c.logit))] += c.prob;
  double above = 0.0;  // mass of buckets before the crossing one
  int32_t crossing = 0;
  while (crossing < kNBuckets - 1 && above + bucket_mass_[static_cast<size_t>(crossing)] < target) {
    above += bucket_mass_[static_cast<size_t>(crossing++)];
  }
  // Buckets before `crossing`: all kept. Bucket `crossing`: sorted, kept while before < target.
  // Later buckets: their preceding mass is >= target, dropped.
  boundary_.clear();
  size_t n_keep = 0;
  for (const Candidate& c : candidates_) {
    const int32_t b = bucket_of(c.logit);
    if (b < crossing) {
      candidates_[n_keep++] = c;
    } else if (b == crossing) {
      boundary_.push_back(c);
    }
  }
  candidates_.resize(n_keep);
  std::sort(boundary_.begin(), boundary_.end(), ranks_before);
  double before = above;
  for (size_t i = 0; i < boundary_.size() && before < target; ++i) {
    candidates_.push_back(boundary_[i]);
    before += boundary_[i].prob;
  }
}

TokenId Sampler::sample_random(const SamplingParams& params, Rng& rng) {
  const float inv_temperature = 1.0f / params.temperature;
  float max_logit = kNegInf;
  for (float& l : work_) {
    l *= inv_temperature;
    max_logit = std::max(max_logit, l);
  }
  DSS_CHECK(max_logit > kNegInf, "no finite logit left to sample from");

  // min-p in logit space: p / p_max = exp(l - max) >= min_p  <=>  l >= max + log(min_p).
  float min_logit = params.min_p > 0.0f ? max_logit + std::log(params.min_p) : kNegInf;
  // top-k as a threshold too: the k-th largest surviving logit, found with a size-k min-heap
  // (one comparison per token once the heap is full). Ties with it are kept, as vLLM does.
  if (params.top_k > 0 && params.top_k < n_vocab_) {
    const auto k = static_cast<size_t>(params.top_k);
    kth_heap_.clear();
    for (const float l : work_) {
      if (!(l > kNegInf && l >= min_logit)) continue;
      if (kth_heap_.size() < k) {
        kth_heap_.push_back(l);
        std::push_heap(kth_heap_.begin(), kth_heap_.end(), std::greater<>());
      } else if (l > kth_heap_.front()) {
        std::pop_heap(kth_heap_.begin(), kth_heap_.end(), std::greater<>());
        kth_heap_.back() = l;
        std::push_heap(kth_heap_.begin(), kth_heap_.end(), std::greater<>());
      }
    }
    if (kth_heap_.size() == k) min_logit = std::max(min_logit, kth_heap_.front());
  }
  candidates_.clear();
  for (int32_t t = 0; t < n_vocab_; ++t) {
    const float l = work_[static_cast<size_t>(t)];
    if (l > kNegInf && l >= min_logit) candidates_.push_back({t, l, std::exp(l - max_logit)});
  }
  if (params.top_p < 1.0f) keep_top_p(params.top_p, max_logit);

  const double u = rng.uniform_double() * total_prob(candidates_);
  double cum = 0.0;
  for (const Candidate& c : candidates_) {
    cum += c.prob;
    if (u < cum) return c.token;
  }
  return candidates_.back().token;  // u within rounding of the total
}

void Sampler::fill_logprobs(std::span<const float> logits, int32_t n_top, SampleResult& out) const {
  float max_logit = kNegInf;
  for (const float l : logits) max_logit = std::max(max_logit, l);
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(l - max_logit);  // float exp, double sum
  const double log_z = static_cast<double>(max_logit) + std::log(sum);
  out.logprob =
      static_cast<float>(static_cast<double>(logits[static_cast<size_t>(out.token)]) - log_z);
  if (n_top <= 0) return;

  // Running top-n as a min-heap on (logit, -id): O(n_vocab log n).
  const auto n = static_cast<size_t>(std::min(n_top, n_vocab_));
  auto better = [&](TokenId a, TokenId b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::vector<TokenId> heap;  // worst on top
  heap.reserve(n + 1);
  for (TokenId t = 0; t < n_vocab_; ++t) {
    if (std::isnan(logits[static_cast<size_t>(t)])) continue;
    if (heap.size() < n) {
      heap.push_back(t);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (better(t, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = t;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);  // best first
  out.top.reserve(heap.size());
  for (const TokenId t : heap) {
    out.top.push_back(
        {t, static_cast<float>(static_cast<double>(logits[static_cast<size_t>(t)]) - log_z)});
  }
}

SampleResult Sampler::sample(std::span<const float> logits, const SamplingParams& params,
                             TokenId eos_token, SamplerState& state,
                             std::span<const uint64_t> allowed) {
  DSS_CHECK(logits.size() == static_cast<size_t>(n_vocab_), "logits=", logits.size(),
            " n_vocab=", n_vocab_);
  std::copy(logits.begin(), logits.end(), work_.begin());
  if (!allowed.empty()) apply_mask(allowed);
  apply_penalties(work_, params, state);
  if (allowed.empty() || state.n_generated() >= params.min_tokens ||
      !min_tokens_empties_mask(allowed, params, eos_token))
    apply_min_tokens(work_, params, eos_token, state.n_generated());
  SampleResult out;
  out.token =
      params.temperature < kGreedyTemperature ? argmax() : sample_random(params, state.rng());
  if (params.logprobs >= 0) fill_logprobs(logits, params.logprobs, out);
  state.append(out.token);
  return out;
}

void Sampler::sample_batch(std::span<const float> logits,
                           std::span<const SamplingParams* const> params, TokenId eos_token,
                           std::span<SamplerState* const> states, std::span<SampleResult> out,
                           std::span<const uint64_t> masks) {
  const size_t n_rows = params.size();
  const auto n_words = static_cast<size_t>(n_mask_words());
  DSS_CHECK(states.size() == n_rows && out.size() == n_rows &&
                logits.size() == n_rows * static_cast<size_t>(n_vocab_) &&
                (masks.empty() || masks.size() == n_rows * n_words),
            "rows: params=", n_rows, " states=", states.size(), " out=", out.size(),
            " logits=", logits.size(), " n_vocab=", n_vocab_, " masks=", masks.size());
  for (size_t i = 0; i < n_rows; ++i) {
    out[i] =
        sample(logits.subspan(i * static_cast<size_t>(n_vocab_), static_cast<size_t>(n_vocab_)),
               *params[i], eos_token, *states[i],
               masks.empty() ? masks : masks.subspan(i * n_words, n_words));
  }
}

}  // namespace dss
