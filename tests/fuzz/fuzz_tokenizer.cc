// Fuzz target: Tokenizer + IncrementalDetokenizer on arbitrary bytes (invalid UTF-8 included).
// Properties: encode never crashes and yields valid ids; decode(encode(x)) == utf8_lossy(x)
// (with and without added-token parsing); streaming detokenization equals batch decoding.
// Needs the real tokenizer: $DSS_TOKENIZER_DIR or third_party/tokenizer/deepseek-v3.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "text/detokenizer.h"
#include "text/utf8.h"

#include "tests/fuzz/fuzz_tokenizer_dir.h"

namespace {

const dss::Tokenizer& tokenizer() { return fuzz_tokenizer("fuzz_tokenizer"); }

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: property violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const dss::Tokenizer& tok = tokenizer();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string repaired = dss::utf8_lossy(text);
  for (bool special : {true, false}) {
    std::vector<dss::TokenId> ids = tok.encode(text, {.add_bos = false, .parse_special = special});
    for (dss::TokenId id : ids) require(tok.is_valid_id(id), "encode produced an unknown id");
    require(tok.decode(ids) == repaired, "decode(encode(x)) != utf8_lossy(x)");
    if (special) {
      dss::IncrementalDetokenizer d(tok);
      std::string streamed;
      for (dss::TokenId id : ids) streamed += d.push(id);
      streamed += d.finish();
      require(streamed == tok.decode_text(ids), "streamed detokenization != batch decode");
    }
  }
  // Raw bytes read as ids (4 bytes each), including out-of-range ones, must decode safely.
  std::vector<dss::TokenId> raw(size / 4);
  for (size_t i = 0; i < raw.size(); ++i) {
    raw[i] = static_cast<dss::TokenId>(data[4 * i] | data[4 * i + 1] << 8 | data[4 * i + 2] << 16) %
             (tok.n_ids() + 16);
  }
  dss::IncrementalDetokenizer d(tok, /*skip_special=*/true);
  std::string streamed;
  for (dss::TokenId id : raw) streamed += d.push(id);
  streamed += d.finish();
  require(streamed == tok.decode_text(raw, true), "streamed != batch decode on random ids");
  return 0;
}
