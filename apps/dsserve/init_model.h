// `dsserve init-model`: a random-weight checkpoint of a preset shape, plus the real DeepSeek
// tokenizer files when the vocabulary is the real one (129280); for the V3.2 presets the
// tokenizer files are V3.2's (no chat_template, add_bos_token false, `<think>` / `</think>`
// tokens).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace dss::app {

struct InitModelOptions {
  std::string preset = "tiny";
  std::string out;
  std::string dtype = "fp8";
  uint64_t seed = 7;
  int32_t vocab_size = 0;  // 0: the preset's
  std::string
      tokenizer_dir;  // empty: $DSS_TOKENIZER_DIR, then <repo>/third_party/tokenizer/deepseek-v3
  bool quiet = false;
};

Status init_model(const InitModelOptions& o);

// Where the DeepSeek-V3 tokenizer files are found by default (may not exist).
std::string default_tokenizer_dir();

}  // namespace dss::app
