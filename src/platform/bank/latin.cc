#include "platform/bank/latin.h"

#include <algorithm>
#include <array>

#include "common/utf8.h"

namespace gpunex::platform::bank {
namespace {

// U+00C0..U+00FF; nullptr: no letter (× and ÷).
constexpr std::array<const char*, 64> kLatin1 = {
    "A", "A", "A", "A", "A", "A", "AE", "C",     "E", "E", "E", "E", "I", "I", "I",  "I",   // C0
    "D", "N", "O", "O", "O", "O", "O",  nullptr, "O", "U", "U", "U", "U", "Y", "TH", "ss",  // D0
    "a", "a", "a", "a", "a", "a", "ae", "c",     "e", "e", "e", "e", "i", "i", "i",  "i",   // E0
    "d", "n", "o", "o", "o", "o", "o",  nullptr, "o", "u", "u", "u", "u", "y", "th", "y",   // F0
};

// U+0100..U+017F (Latin Extended-A).
constexpr std::array<const char*, 128> kLatinExtA = {
    "A", "a", "A",  "a",  "A", "a", "C", "c", "C", "c", "C", "c", "C", "c", "D", "d",  // 0100
    "D", "d", "E",  "e",  "E", "e", "E", "e", "E", "e", "E", "e", "G", "g", "G", "g",  // 0110
    "G", "g", "G",  "g",  "H", "h", "H", "h", "I", "i", "I", "i", "I", "i", "I", "i",  // 0120
    "I", "i", "IJ", "ij", "J", "j", "K", "k", "k", "L", "l", "L", "l", "L", "l", "L",  // 0130
    "l", "L", "l",  "N",  "n", "N", "n", "N", "n", "n", "N", "n", "O", "o", "O", "o",  // 0140
    "O", "o", "OE", "oe", "R", "r", "R", "r", "R", "r", "S", "s", "S", "s", "S", "s",  // 0150
    "S", "s", "T",  "t",  "T", "t", "T", "t", "U", "u", "U", "u", "U", "u", "U", "u",  // 0160
    "U", "u", "U",  "u",  "W", "w", "Y", "y", "Y", "Z", "z", "Z", "z", "Z", "z", "s",  // 0170
};

bool InSepaSet(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '-' || c == '?' || c == ':' || c == '(' || c == ')' || c == '.' || c == ',' ||
         c == '\'' || c == '+' || c == ' ';
}

bool IsSpace(char32_t c) {
  return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Combining marks, zero-width characters, the soft hyphen and the byte order mark: no
// visible character of their own.
bool IsDropped(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || c == 0x00AD || (c >= 0x200B && c <= 0x200F) ||
         c == 0x2060 || c == 0xFEFF || (c >= 0xFE00 && c <= 0xFE0F);
}

// The ASCII spelling of `c`; "" when dropped, " " for white space, "." when there is
// none. `keep` says which ASCII characters stand for themselves.
template <typename Keep>
std::string_view Spell(char32_t c, Keep keep, char* buf) {
  if (c < 0x80 && keep(c)) {
    buf[0] = static_cast<char>(c);
    return {buf, 1};
  }
  if (IsSpace(c)) return " ";
  if (IsDropped(c)) return "";
  if (c >= 0xC0 && c <= 0xFF && kLatin1[c - 0xC0]) return kLatin1[c - 0xC0];
  if (c >= 0x100 && c <= 0x17F) return kLatinExtA[c - 0x100];
  switch (c) {
    case 0x0218:  // Ș (Romanian comma below)
      return "S";
    case 0x0219:
      return "s";
    case 0x021A:  // Ț
      return "T";
    case 0x021B:
      return "t";
    case 0x1E9E:  // ẞ
      return "SS";
    case 0x2018:  // ‘ ’ ‚ ‛ ′ : apostrophes
    case 0x2019:
    case 0x201A:
    case 0x201B:
    case 0x2032:
      return keep(U'\'') ? "'" : ".";
    case 0x2010:  // hyphens, dashes and the minus sign
    case 0x2011:
    case 0x2012:
    case 0x2013:
    case 0x2014:
    case 0x2015:
    case 0x2212:
      return "-";
    default:
      return ".";
  }
}

// Transliterates, collapses white space, trims, and cuts at `max_chars`.
template <typename Keep>
std::string Convert(std::string_view utf8, size_t max_chars, Keep keep) {
  std::string out;
  out.reserve(std::min(utf8.size(), max_chars));
  bool pending_space = false;
  char buf[1];
  for (size_t pos = 0; pos < utf8.size() && out.size() < max_chars;) {
    const char32_t cp = NextCodePoint(utf8, &pos);
    const std::string_view spelled =
        cp == kInvalidUtf8 ? std::string_view(".") : Spell(cp, keep, buf);
    if (spelled == " ") {
      pending_space = !out.empty();
      continue;
    }
    for (char ch : spelled) {
      if (pending_space) {
        if (out.size() + 1 >= max_chars) return out;  // no trailing space at the cut
        out.push_back(' ');
        pending_space = false;
      }
      if (out.size() >= max_chars) return out;
      out.push_back(ch);
    }
  }
  return out;
}

}  // namespace

std::string ToSepaLatin(std::string_view utf8, size_t max_chars) {
  return Convert(utf8, max_chars, InSepaSet);
}

bool IsSepaLatin(std::string_view s) {
  for (char c : s) {
    if (!InSepaSet(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string ToNachaText(std::string_view utf8, size_t width) {
  std::string out = Convert(utf8, width, [](char32_t c) { return c >= 0x20 && c < 0x7F; });
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  out.resize(width, ' ');
  return out;
}

}  // namespace gpunex::platform::bank
