// The real DeepSeek-V3 tokenizer for the fuzz targets, loaded once: $DSS_TOKENIZER_DIR or
// third_party/tokenizer/deepseek-v3 (scripts/setup installs it); aborts naming `who` if missing.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "text/tokenizer.h"

inline const dss::Tokenizer& fuzz_tokenizer(const char* who) {
  static const dss::Tokenizer* tok = [who] {
    const char* env = std::getenv("DSS_TOKENIZER_DIR");
    std::string dir = env ? env : DSS_SOURCE_DIR "/third_party/tokenizer/deepseek-v3";
    auto t = dss::Tokenizer::load_dir(dir);
    if (!t) {
      std::fprintf(stderr, "%s: %s (run scripts/setup)\n", who, t.message().c_str());
      std::abort();
    }
    return new dss::Tokenizer(std::move(t).value());
  }();
  return *tok;
}
