#include "apps/dsserve/init_model.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/dsserve/default_tokenizer_dir.h"
#include "base/clock.h"
#include "base/log.h"
#include "io/json.h"
#include "model/deepseek/random_checkpoint.h"

namespace dss::app {

namespace fs = std::filesystem;

namespace {
Status write_json(const fs::path& path, const Json& j, int indent) {
  std::ofstream f(path, std::ios::trunc);
  f << j.dump(indent) << "\n";
  if (!f.flush()) return Status::error(path.string(), ": cannot write");
  return Status::ok();
}

// Turns the copied DeepSeek-V3 tokenizer files in `dir` into DeepSeek-V3.2's
// (deepseek-reference.md 4.1, 4.5):
//   tokenizer_config.json: no chat_template (V3.2's chat format is the Python encoder
//     encoding_dsv32.py; dsserve picks it from config.json's model_type) and add_bos_token false;
//   tokenizer.json: ids 128798 / 128799 are `<think>` / `</think>` (V3's placeholders there), as
//     the V3.2 README's encoded example shows. special: false, so they stay in decoded text for
//     the reasoning parser (the flag's value in the official file is not verified).
Status make_v32_tokenizer_files(const fs::path& dir) {
  DSS_ASSIGN_OR_RETURN(Json cfg, load_json_file((dir / "tokenizer_config.json").string()));
  cfg.erase("chat_template");
  cfg["add_bos_token"] = false;
  DSS_RETURN_IF_ERROR(write_json(dir / "tokenizer_config.json", cfg, 2));
  DSS_ASSIGN_OR_RETURN(Json tok, load_json_file((dir / "tokenizer.json").string()));
  for (Json& a : tok["added_tokens"]) {
    const int id = a.value("id", -1);
    if (id == 128798 || id == 128799) {
      a["content"] = id == 128798 ? "<think>" : "</think>";
      a["special"] = false;
    }
  }
  return write_json(dir / "tokenizer.json", tok, -1);
}

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
    if (src.empty()) {
      return Status::error(
          "no tokenizer directory: $DSS_TOKENIZER_DIR is unset and no "
          "third_party/tokenizer/deepseek-v3 lies above the executable; run scripts/setup or "
          "pass --tokenizer-dir");
    }
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
    if (cfg.value("model_type", "") == "deepseek_v32")
      DSS_RETURN_IF_ERROR(make_v32_tokenizer_files(fs::path(o.out)));
  }
  if (!o.quiet)
    log_info("init-model: wrote ", o.out, " (", o.preset, ", ", o.dtype, ", seed ", o.seed, ") in ",
             now_seconds() - t0, " s");
  return Status::ok();
}

}  // namespace dss::app
