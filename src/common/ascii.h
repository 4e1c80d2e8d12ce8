// ASCII case folding, for what is compared without case by the rules that define it
// (email addresses' domains, URL schemes and hosts, the engine's error words).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpunex {

// `s` with A-Z as a-z; every other byte (UTF-8 included) as it is.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace gpunex
