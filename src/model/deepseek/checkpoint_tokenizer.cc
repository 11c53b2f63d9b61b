#include "model/deepseek/checkpoint_tokenizer.h"

#include <filesystem>
#include <fstream>

#include "io/json.h"

namespace dss {

namespace fs = std::filesystem;

namespace {

Status write_json(const fs::path& path, const Json& j, int indent) {
  std::ofstream f(path, std::ios::trunc);
  f << j.dump(indent) << "\n";
  if (!f.flush()) return Status::error(path.string(), ": cannot write");
  return Status::ok();
}

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

}  // namespace

Status write_checkpoint_tokenizer(const std::string& tokenizer_dir, const std::string& out_dir,
                                  bool v32) {
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    std::error_code ec;
    fs::copy_file(fs::path(tokenizer_dir) / f, fs::path(out_dir) / f,
                  fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return Status::error(tokenizer_dir, "/", f, ": cannot copy the tokenizer (", ec.message(),
                           "); run scripts/setup or pass --tokenizer-dir");
    }
    fs::permissions(fs::path(out_dir) / f, fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::add, ec);
  }
  return v32 ? make_v32_tokenizer_files(fs::path(out_dir)) : Status::ok();
}

}  // namespace dss
