// A JSON list of token ids as text (`dsserve tokenize --decode` input), checked against a
// tokenizer's vocabulary.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "core/types.h"
#include "text/tokenizer.h"

namespace dss {

// "[1, 2, 3]" -> ids; an error naming `where` and the first value that is not an id of `tok`.
Result<std::vector<TokenId>> token_ids_from_json(const Tokenizer& tok, const std::string& text,
                                                 const std::string& where);

}  // namespace dss
