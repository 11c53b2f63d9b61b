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
  int32_t vocab_size = 0;     // 0: the preset's
  int32_t n_layers = 0;       // 0: the preset's num_hidden_layers
  int32_t mtp_layers = 0;     // num_nextn_predict_layers: 0 or 1 (DeepSeek's MTP module)
  std::string tokenizer_dir;  // empty: default_tokenizer_dir() (default_tokenizer_dir.h)
  bool quiet = false;
};

Status init_model(const InitModelOptions& o);

}  // namespace dss::app
