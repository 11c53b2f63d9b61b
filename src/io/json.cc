#include "io/json.h"

#include <vector>

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

namespace {

// SAX handler: nlohmann's DOM builder plus a depth limit and the path of the value being built
// (for the error message).
class BoundedDomSax {
 public:
  using Dom = nlohmann::detail::json_sax_dom_parser<OrderedJson>;
  using string_t = OrderedJson::string_t;

  BoundedDomSax(OrderedJson& out, int max_depth) : dom_(out, false), max_depth_(max_depth) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(OrderedJson::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(OrderedJson::number_unsigned_t v) {
    return value() && dom_.number_unsigned(v);
  }
  bool number_float(OrderedJson::number_float_t v, const string_t& s) {
    return value() && dom_.number_float(v, s);
  }
  bool string(string_t& v) { return value() && dom_.string(v); }
  bool binary(OrderedJson::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(size_t n) { return open(false) && dom_.start_object(n); }
  bool key(string_t& k) {
    frames_.back().key = k;
    return dom_.key(k);
  }
  bool end_object() {
    frames_.pop_back();
    return dom_.end_object();
  }
  bool start_array(size_t n) { return open(true) && dom_.start_array(n); }
  bool end_array() {
    frames_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(size_t position, const std::string&, const nlohmann::detail::exception&) {
    error_ = Status::error(": not valid JSON (syntax error at byte ", position, ")");
    return false;
  }

  const Status& error() const { return error_; }
  bool too_deep() const { return too_deep_; }

  // The path of the value being parsed: ".tools[0].function".
  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.is_array) {
        p += '[';
        p += std::to_string(f.n_values == 0 ? 0 : f.n_values - 1);
        p += ']';
      } else {
        p += '.';
        p += f.key;
      }
    }
    return p;
  }

 private:
  struct Frame {
    bool is_array = false;
    size_t n_values = 0;  // arrays: values started so far
    std::string key;      // objects: the current key
  };

  // A value starts in the current container.
  bool value() {
    if (!frames_.empty() && frames_.back().is_array) frames_.back().n_values++;
    return true;
  }

  bool open(bool is_array) {
    value();
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    frames_.push_back(Frame{is_array, 0, {}});
    return true;
  }

  Dom dom_;
  int max_depth_;
  std::vector<Frame> frames_;
  bool too_deep_ = false;
  Status error_ = Status::ok();
};

}  // namespace

Result<OrderedJson> parse_json_bounded(std::string_view text, const std::string& what,
                                       int max_depth) {
  OrderedJson out;
  BoundedDomSax sax(out, max_depth);
  const bool ok = OrderedJson::sax_parse(text, &sax, nlohmann::detail::input_format_t::json,
                                         /*strict=*/true);
  if (ok) return out;
  if (sax.too_deep()) {
    std::string name = what + sax.path();
    if (!name.empty() && name[0] == '.') name.erase(0, 1);
    return Status::error(name.empty() ? "body" : name, ": nested deeper than ", max_depth,
                         " levels");
  }
  const std::string doc = what.empty() ? "body" : what;
  if (!sax.error()) return Status::error(doc, sax.error().message());
  return Status::error(doc, ": not valid JSON");
}

}  // namespace dss
