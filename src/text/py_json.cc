#include "text/py_json.h"

#include <cstdio>

#include "text/utf8.h"

namespace dss {
namespace {

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    uint8_t c = static_cast<uint8_t>(s[i]);
    char buf[16];
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        default:
          if (c < 0x20) {
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    size_t n = utf8_valid_len(s, i);
    if (n == 0) {  // not reachable for strings that came from a JSON parser; keep it lossless
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (!ensure_ascii) {
      out.append(s, i, n);
    } else {
      uint32_t cp = utf8_decode(s, i, n);
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                      0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      out += buf;
    }
    i += n;
  }
  out.push_back('"');
}

void dump(const OrderedJson& v, bool ensure_ascii, std::string& out) {
  if (v.is_object()) {
    out.push_back('{');
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      dump_string(it.key(), ensure_ascii, out);
      out += ": ";
      dump(it.value(), ensure_ascii, out);
    }
    out.push_back('}');
  } else if (v.is_array()) {
    out.push_back('[');
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      dump(v[i], ensure_ascii, out);
    }
    out.push_back(']');
  } else if (v.is_string()) {
    dump_string(v.get_ref<const std::string&>(), ensure_ascii, out);
  } else if (v.is_boolean()) {
    out += v.get<bool>() ? "true" : "false";
  } else if (v.is_null()) {
    out += "null";
  } else {
    out += v.dump();  // numbers: shortest round-trip, same exponent rules as Python's repr
  }
}

}  // namespace

std::string py_json_dumps(const OrderedJson& value, bool ensure_ascii) {
  std::string out;
  dump(value, ensure_ascii, out);
  return out;
}

}  // namespace dss
