#include "io/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "io/json.h"

namespace dss {

namespace fs = std::filesystem;

Result<Checkpoint> Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::error(dir, ": not a directory");
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  std::map<std::string, std::string> weight_map;  // tensor -> file name
  std::vector<std::string> file_names;
  if (fs::exists(index_path, ec)) {
    DSS_ASSIGN_OR_RETURN(Json index, load_json_file(index_path));
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
      return Status::error(index_path, ": missing weight_map");
    }
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        return Status::error(index_path, ": weight_map['", it.key(), "'] is not a file name");
      weight_map[it.key()] = it.value().get<std::string>();
      file_names.push_back(it.value().get<std::string>());
    }
    std::sort(file_names.begin(), file_names.end());
    file_names.erase(std::unique(file_names.begin(), file_names.end()), file_names.end());
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".safetensors")
        file_names.push_back(e.path().filename().string());
    }
    std::sort(file_names.begin(), file_names.end());
    if (file_names.empty()) {
      return Status::error(dir, ": no model.safetensors.index.json and no *.safetensors files");
    }
  }
  std::map<std::string, const SafetensorsFile*> by_name;
  for (const std::string& f : file_names) {
    if (f.find('/') != std::string::npos || f == "..")
      return Status::error(index_path, ": bad file name '", f, "'");
    DSS_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open((fs::path(dir) / f).string()));
    ck.files_.push_back(std::make_unique<SafetensorsFile>(std::move(st)));
    by_name[f] = ck.files_.back().get();
  }
  if (!weight_map.empty()) {
    for (const auto& [tensor, file] : weight_map) {
      const SafetensorsFile* st = by_name.at(file);
      if (!st->has(tensor)) {
        return Status::error(st->path(), ": tensor '", tensor, "' listed in ", index_path,
                             " is not in the file");
      }
      ck.where_[tensor] = st;
    }
  } else {
    for (const auto& f : ck.files_) {
      for (const std::string& n : f->names()) {
        if (ck.where_.count(n))
          return Status::error(f->path(), ": tensor '", n, "' also appears in another file");
        ck.where_[n] = f.get();
      }
    }
  }
  return ck;
}

Result<TensorView> Checkpoint::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    return Status::error(dir_, ": tensor '", name, "' missing from the checkpoint");
  return it->second->get(name);
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [n, f] : where_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

size_t Checkpoint::total_bytes() const {
  size_t total = 0;
  for (const auto& [n, f] : where_) total += f->get(n)->n_bytes;
  return total;
}

}  // namespace dss
