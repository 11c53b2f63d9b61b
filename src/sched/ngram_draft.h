// Prompt-lookup drafting (speculative decoding without a draft model): a sequence that repeats
// itself (code, quoted context, lists, a looping model) is likely to go on as it did after the
// last time its newest n tokens appeared. Pure function over the sequence's tokens.
#pragma once

#include <cstdint>
#include <span>

#include "core/types.h"

namespace dss {

// Finds the latest earlier occurrence of the last n tokens of `tokens` (n from n_max down to
// n_min; the first n that occurs wins) and copies up to out.size() tokens that followed it into
// `out`. Returns how many were copied (0: no occurrence, or n_min > tokens.size() - 1).
// O(tokens.size() * n_max) per call.
int32_t ngram_draft(std::span<const TokenId> tokens, int32_t n_min, int32_t n_max,
                    std::span<TokenId> out);

}  // namespace dss
