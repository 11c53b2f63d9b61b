// The GPT-2 "byte level" alphabet used by tokenizer.json: every byte 0..255 is written as one
// printable Unicode character (printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100..U+0143 in byte order). Vocabulary strings are in this alphabet; the text layer works
// on raw bytes and converts only when loading.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dss {

// The code point that stands for byte `b`.
uint32_t byte_level_char(uint8_t b);

// Converts a vocabulary string to raw bytes; nullopt if some character is outside the alphabet.
std::optional<std::string> byte_level_decode(std::string_view token);

}  // namespace dss
