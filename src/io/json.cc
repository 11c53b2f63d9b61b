#include "io/json.h"

#include "io/mapped_file.h"

namespace dss {

Result<Json> parse_json(const std::string& text, const std::string& what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::error(what, ": invalid JSON");
  return j;
}

Result<Json> load_json_file(const std::string& path) {
  DSS_ASSIGN_OR_RETURN(std::string text, read_text_file(path));
  return parse_json(text, path);
}

}  // namespace dss
