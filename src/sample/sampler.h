// Sampler: picks one token from one row of logits under a request's SamplingParams.
//
// Pipeline (vLLM v1 order, see NOTE below), on a private copy of the row (steps 1-2 are in
// logits_processors.h):
//   0. allowed-token mask (structured output, when given): every token whose bit is 0 becomes
//      -inf, so everything below (penalties, greedy, temperature, min-p, top-k, top-p) works
//      among the allowed tokens only;
//   1. penalties: repetition (CTRL-style: tokens seen in prompt or output; logit > 0 divided by
//      the penalty, else multiplied), then frequency (logit -= f * count in output), then presence
//      (logit -= p if the token was generated);
//   2. min_tokens: while fewer than min_tokens were generated, stop_token_ids and EOS (unless
//      ignore_eos) are set to -inf; under a mask, skipped if it would leave no allowed token (the
//      grammar can only end: it wins over min_tokens);
//   3. temperature < 1e-5 means greedy: argmax, first maximum; nothing below applies;
//   4. divide by temperature;
//   5. min-p: drop tokens with p < min_p * p_max;
//   6. top-k: keep logits >= the k-th largest (ties at the boundary are kept, as vLLM does);
//   7. top-p: keep the most likely tokens until the mass before the next one reaches top_p
//      (the token that crosses top_p is kept);
//   8. draw from the renormalised survivors with the request's RNG.
// NOTE: vLLM v1 applies min-p after temperature and before top-k/top-p (its v0 sampler applied it
//   last). min-p commutes with top-k but not with top-p; we follow v1.
//
// Logprobs (params.logprobs >= 0): vLLM's default "raw_logprobs": log_softmax of the row exactly
//   as the model produced it, before penalties, masks, temperature and truncation.
// Reproducibility: the same logits, params and SamplerState (same seed) give the same token.
// Cost: O(n_vocab) per row and one exp per surviving token. top-k keeps a size-k heap; top-p
//   buckets by logit and sorts only the bucket where the mass crosses top_p. No full sort of the
//   vocabulary; no allocation after the first calls (scratch buffers are reused).
// Threading: a Sampler holds scratch buffers; use one per thread (the engine thread).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/sampling_params.h"
#include "core/types.h"
#include "sample/sampler_state.h"

namespace dss {

struct TokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;
};

struct SampleResult {
  TokenId token = 0;
  float logprob = 0.0f;           // raw logprob of `token`; set only when params.logprobs >= 0
  std::vector<TokenLogprob> top;  // [min(params.logprobs, n_vocab)] raw logprobs, highest first,
                                  // ties by lower id; empty when params.logprobs < 1
};

class Sampler {
 public:
  // Temperatures below this are greedy (vLLM's _SAMPLING_EPS).
  static constexpr float kGreedyTemperature = 1e-5f;

  explicit Sampler(int32_t n_vocab);
  int32_t n_vocab() const { return n_vocab_; }

  // A surviving token during truncation (public only for helpers in sampler.cc).
  struct Candidate {
    TokenId token;
    float logit;  // after penalties and temperature
    float prob;   // exp(logit - max_logit), unnormalised
  };

  // Words of an allowed-token mask: bit t % 64 of word t / 64 is 1 when token t is allowed.
  int32_t n_mask_words() const { return (n_vocab_ + 63) / 64; }

  // logits: [n_vocab] f32 (finite or -inf; at least one finite after masking, else DSS_CHECK).
  // eos_token: the model's EOS id, or a negative value for none. Appends the chosen token to
  // `state`. Params are assumed validated (temperature >= 0, 0 < top_p <= 1, top_k >= -1,
  // 0 <= min_p <= 1, repetition_penalty > 0).
  // allowed: empty (no constraint) or [n_mask_words()] with at least one allowed token whose
  // logit is finite; the chosen token is always an allowed one.
  SampleResult sample(std::span<const float> logits, const SamplingParams& params,
                      TokenId eos_token, SamplerState& state,
                      std::span<const uint64_t> allowed = {});

  // Row by row over logits [n_rows, n_vocab] (row-major); params, states and out are [n_rows];
  // masks empty or [n_rows, n_mask_words()]. Same results as calling `sample` on each row in order.
  void sample_batch(std::span<const float> logits, std::span<const SamplingParams* const> params,
                    TokenId eos_token, std::span<SamplerState* const> states,
                    std::span<SampleResult> out, std::span<const uint64_t> masks = {});

 private:
  TokenId argmax() const;
  void apply_mask(std::span<const uint64_t> allowed);
  // True when min_tokens, applied now, would leave no allowed token.
  bool min_tokens_empties_mask(std::span<const uint64_t> allowed, const SamplingParams& params,
                               TokenId eos_token) const;
  TokenId sample_random(const SamplingParams& params, Rng& rng);
  void keep_top_p(float top_p, float max_logit);
  void fill_logprobs(std::span<const float> logits, int32_t n_top, SampleResult& out) const;

  int32_t n_vocab_;
  std::vector<float> work_;            // [n_vocab] processed logits
  std::vector<Candidate> candidates_;  // survivors of min-p / top-k / top-p
  std::vector<Candidate> boundary_;    // top-p: the bucket where the mass crosses top_p
  std::vector<double> bucket_mass_;    // top-p: mass per logit bucket
  std::vector<float> kth_heap_;        // top-k: the k largest logits seen, min-heap
};

}  // namespace dss
