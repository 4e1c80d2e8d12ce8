// A strict UTF-8 decoder for the bank folder's text checks and transliteration.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpunex::platform::bank::internal {

inline constexpr char32_t kInvalidUtf8 = 0xFFFFFFFF;

// Decodes the code point at s[*pos] and advances *pos past it. A malformed sequence
// (bad lead or continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short)
// gives kInvalidUtf8 and advances by one byte.
// REQUIRES: *pos < s.size()
inline char32_t NextCodePoint(std::string_view s, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(*pos);
  if (b0 < 0x80) {
    ++*pos;
    return b0;
  }
  int len = 0;
  char32_t cp = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*pos;
    return kInvalidUtf8;
  }
  if (*pos + len > s.size()) {
    ++*pos;
    return kInvalidUtf8;
  }
  for (int i = 1; i < len; ++i) {
    const unsigned char b = byte(*pos + i);
    if ((b & 0xC0) != 0x80) {
      ++*pos;
      return kInvalidUtf8;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*pos;
    return kInvalidUtf8;
  }
  *pos += len;
  return cp;
}

}  // namespace gpunex::platform::bank::internal
