#include "text/token_ids_json.h"

#include <cstdint>

#include "io/json.h"

namespace dss {

Result<std::vector<TokenId>> token_ids_from_json(const Tokenizer& tok, const std::string& text,
                                                 const std::string& where) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return Status::error(where, ": expected a JSON list of token ids");
  }
  std::vector<TokenId> ids;
  for (const Json& v : j) {
    const bool in_range = v.is_number_integer() && v.get<int64_t>() >= INT32_MIN &&
                          v.get<int64_t>() <= INT32_MAX &&
                          tok.is_valid_id(static_cast<TokenId>(v.get<int64_t>()));
    if (!in_range) {
      return Status::error(where, ": ", v.dump(), " is not a token id of this tokenizer");
    }
    ids.push_back(static_cast<TokenId>(v.get<int64_t>()));
  }
  return ids;
}

}  // namespace dss
