#include "common/utf8.h"

namespace gpunex {

bool IsInvisibleFormat(char32_t cp) {
  return cp == 0x00AD || cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

std::string StripInvisible(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t cp = NextCodePoint(s, &pos);
    if (cp != kInvalidUtf8 && IsInvisibleFormat(cp)) continue;
    out.append(s.substr(start, pos - start));
  }
  return out;
}

}  // namespace gpunex
