#include "text/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/check.h"

namespace dss {
namespace {

// Unicode White_Space (the meaning of `\s` in Oniguruma and Rust's regex).
constexpr const char* kWhiteSpace =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

// Rewrites `\s` and `\S` (outside and inside character classes) to explicit White_Space sets.
Result<std::string> translate(const std::string& p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[i + 1];
      ++i;
      if (n == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (n == 'S') {
        if (in_class) return Status::error("pre_tokenizer: \\S inside a character class");
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' or '^]' right after '[' is literal.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
  Regex() = default;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
};

}  // namespace

struct PreTokenizer::Impl {
  std::vector<std::unique_ptr<Regex>> steps;
  size_t max_ovector = 1;
};

PreTokenizer::PreTokenizer() : impl_(std::make_unique<Impl>()) {}
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
size_t PreTokenizer::n_steps() const { return impl_->steps.size(); }

Result<PreTokenizer> PreTokenizer::from_patterns(const std::vector<std::string>& patterns) {
  PreTokenizer pt;
  for (const std::string& raw : patterns) {
    DSS_ASSIGN_OR_RETURN(std::string pattern, translate(raw));
    int err = 0;
    PCRE2_SIZE err_off = 0;
    auto re = std::make_unique<Regex>();
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &err, &err_off, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return Status::error("pre_tokenizer: regex `", raw, "` at offset ", err_off, ": ",
                           reinterpret_cast<const char*>(msg));
    }
    // JIT is an optimisation; the interpreter gives the same matches if it is unavailable.
    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    pt.impl_->steps.push_back(std::move(re));
  }
  return pt;
}

Result<PreTokenizer> PreTokenizer::from_json(const Json& j) {
  if (j.is_null()) return from_patterns({});
  std::vector<Json> list;
  std::string type = j.value("type", "");
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return Status::error("pre_tokenizer: Sequence without pretokenizers");
    }
    for (const Json& s : j["pretokenizers"]) list.push_back(s);
  } else {
    list.push_back(j);
  }
  std::vector<std::string> patterns;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& s = list[i];
    std::string t = s.value("type", "");
    if (t == "Split") {
      if (s.value("behavior", "") != "Isolated" || s.value("invert", false) ||
          !s.contains("pattern") || !s["pattern"].contains("Regex")) {
        return Status::error(
            "pre_tokenizer: only Split{Regex, Isolated, invert=false} is supported");
      }
      patterns.push_back(s["pattern"]["Regex"].get<std::string>());
    } else if (t == "ByteLevel") {
      if (i + 1 != list.size() || s.value("add_prefix_space", false) ||
          s.value("use_regex", true)) {
        return Status::error(
            "pre_tokenizer: ByteLevel must come last with add_prefix_space=false, use_regex=false");
      }
    } else {
      return Status::error("pre_tokenizer: unsupported step type '", t, "'");
    }
  }
  return from_patterns(patterns);
}

namespace {

struct SplitCtx {
  const std::vector<std::unique_ptr<Regex>>* steps;
  pcre2_match_data* md;
  PreTokenizer::PieceFn fn;
  void* ctx;
};

void split_step(const SplitCtx& c, size_t i_step, std::string_view text) {
  if (text.empty()) return;
  if (i_step == c.steps->size()) {
    c.fn(c.ctx, text);
    return;
  }
  const pcre2_code* code = (*c.steps)[i_step]->code;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, emitted = 0;
  while (pos < text.size()) {
    int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, c.md, nullptr);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
      // JIT stack exhausted on a pathological piece: the interpreter (heap-backed) gives the
      // same matches. If even that hits a limit, the rest stays one piece (still lossless).
      rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, c.md,
                       nullptr);
    }
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(c.md);
    size_t b = ov[0], e = ov[1];
    if (b > emitted) split_step(c, i_step + 1, text.substr(emitted, b - emitted));
    if (e > b) {
      split_step(c, i_step + 1, text.substr(b, e - b));
      emitted = e;
      pos = e;
    } else {
      // Empty match (not produced by DeepSeek's patterns): step over one code point.
      pos = b + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  if (emitted < text.size()) split_step(c, i_step + 1, text.substr(emitted));
}

}  // namespace

void PreTokenizer::split(std::string_view text, PieceFn fn, void* ctx) const {
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  DSS_CHECK(md != nullptr, "pcre2_match_data_create failed");
  SplitCtx c{&impl_->steps, md, fn, ctx};
  split_step(c, 0, text);
  pcre2_match_data_free(md);
}

}  // namespace dss
