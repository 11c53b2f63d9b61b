#include "apps/dsserve/init_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/clock.h"
#include "base/log.h"
#include "model/deepseek/random_checkpoint.h"

namespace dss::app {

namespace fs = std::filesystem;

std::string default_tokenizer_dir() {
  if (const char* env = std::getenv("DSS_TOKENIZER_DIR"); env != nullptr && *env != '\0')
    return env;
  return std::string(DSS_SOURCE_DIR) + "/third_party/tokenizer/deepseek-v3";
}

namespace {
void print_progress(int64_t done, int64_t total) {
  std::fprintf(stderr, "\rinit-model: %lld/%lld layers", static_cast<long long>(done),
               static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\n");
}
}  // namespace

Status init_model(const InitModelOptions& o) {
  DSS_ASSIGN_OR_RETURN(Json cfg, preset_config(o.preset));
  if (o.vocab_size > 0) cfg["vocab_size"] = o.vocab_size;
  RandomCheckpointOptions ro;
  ro.out_dir = o.out;
  ro.seed = o.seed;
  ro.fp8 = o.dtype == "fp8";
  if (!o.quiet) ro.progress = print_progress;
  const double t0 = now_seconds();
  DSS_RETURN_IF_ERROR(write_random_checkpoint(cfg, ro));
  if (cfg["vocab_size"].get<int>() == 129280) {
    const std::string src = o.tokenizer_dir.empty() ? default_tokenizer_dir() : o.tokenizer_dir;
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
      std::error_code ec;
      fs::copy_file(fs::path(src) / f, fs::path(o.out) / f, fs::copy_options::overwrite_existing,
                    ec);
      if (ec) {
        return Status::error(src, "/", f, ": cannot copy the tokenizer (", ec.message(),
                             "); run scripts/setup or pass --tokenizer-dir");
      }
      fs::permissions(fs::path(o.out) / f, fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add, ec);
    }
  }
  if (!o.quiet)
    log_info("init-model: wrote ", o.out, " (", o.preset, ", ", o.dtype, ", seed ", o.seed, ") in ",
             now_seconds() - t0, " s");
  return Status::ok();
}

}  // namespace dss::app
