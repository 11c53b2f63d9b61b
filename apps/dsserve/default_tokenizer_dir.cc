#include "apps/dsserve/default_tokenizer_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace dss::app {

std::string default_tokenizer_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("DSS_TOKENIZER_DIR"); env != nullptr && *env != '\0')
    return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    const fs::path candidate = dir / "third_party" / "tokenizer" / "deepseek-v3";
    if (fs::is_regular_file(candidate / "tokenizer.json", ec)) return candidate.string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

}  // namespace dss::app
