// A strict UTF-8 decoder (the bank folder's text checks and transliteration, names), and
// the removal of the invisible characters that make a name display other than it reads.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpunex {

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

// The bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E-U+200F,
// U+202A-U+202E, U+2066-U+2069) and the zero-width and invisible formatting characters
// (U+200B-U+200D, U+2060-U+2064, U+FEFF, the soft hyphen U+00AD).
bool IsInvisibleFormat(char32_t cp);

// `s` without its IsInvisibleFormat characters; malformed bytes are kept as they are (the
// caller's own UTF-8 check names them).
std::string StripInvisible(std::string_view s);

}  // namespace gpunex
