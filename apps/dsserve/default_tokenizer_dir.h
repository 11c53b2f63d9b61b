// Where `dsserve` finds the DeepSeek-V3 tokenizer files when no flag names a directory
// (`init-model --tokenizer-dir`, `bench` / `tune --tokenizer`):
//   1. $DSS_TOKENIZER_DIR, when set and not empty;
//   2. else third_party/tokenizer/deepseek-v3 (the copy scripts/setup fetches) in the nearest
//      directory above the running executable (/proc/self/exe) that has one with a
//      tokenizer.json: a build tree inside the repository (build/<preset>/apps/dsserve/dsserve)
//      finds the repository's copy, wherever the repository is now (nothing of the build
//      machine's source path is compiled in);
//   3. else "" (an installed binary with no repository above it): the caller asks for the flag.
#pragma once

#include <string>

namespace dss::app {

std::string default_tokenizer_dir();

}  // namespace dss::app
