// UTF-8 helpers for the text layer: validation, lossy repair and "how much of this buffer is
// complete". All functions take raw bytes (std::string_view) and never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dss {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if s[i] does not start one
// (stray continuation byte, overlong form, surrogate, > U+10FFFF, or truncated at the end).
size_t utf8_valid_len(std::string_view s, size_t i);

// True if all of `s` is well-formed UTF-8.
bool utf8_is_valid(std::string_view s);

// Replaces every ill-formed subsequence with U+FFFD using the "maximal subpart" rule of
// Unicode §3.9 (the rule of WHATWG TextDecoder, Node's Buffer.toString and Rust's
// String::from_utf8_lossy), so results agree byte for byte with those implementations.
std::string utf8_lossy(std::string_view s);

// Length of the longest prefix of `s` that can be emitted now: everything except a trailing,
// still-incomplete (but so far valid) multi-byte sequence. Invalid bytes count as complete
// (they can never become valid), so a stream never stalls on garbage.
size_t utf8_complete_prefix(std::string_view s);

// Decodes the code point at s[i] (which must start a valid sequence of `len` bytes).
uint32_t utf8_decode(std::string_view s, size_t i, size_t len);

// Appends the UTF-8 encoding of `cp` (<= U+10FFFF, not a surrogate) to `out`.
void utf8_append(std::string& out, uint32_t cp);

}  // namespace dss
