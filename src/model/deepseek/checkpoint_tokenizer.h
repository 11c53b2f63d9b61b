// The tokenizer files a generated checkpoint carries when its vocabulary is DeepSeek's real one
// (129280): tokenizer.json and tokenizer_config.json copied from a DeepSeek-V3 tokenizer
// directory; for V3.2 (`v32`) rewritten into V3.2's (docs/deepseek-reference.md 4.1, 4.5):
//   tokenizer_config.json: no chat_template (V3.2's chat format is the Python encoder
//     encoding_dsv32.py; dsserve picks it from config.json's model_type) and add_bos_token false;
//   tokenizer.json: ids 128798 / 128799 are `<think>` / `</think>` (V3's placeholders there), as
//     the V3.2 README's encoded example shows. special: false, so they stay in decoded text for
//     the reasoning parser (the flag's value in the official file is not verified).
// Errors name the file.
#pragma once

#include <string>

#include "base/status.h"

namespace dss {

Status write_checkpoint_tokenizer(const std::string& tokenizer_dir, const std::string& out_dir,
                                  bool v32);

}  // namespace dss
