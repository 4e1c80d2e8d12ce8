#include "common/money.h"

#include <limits>

namespace gpunex {

std::optional<Micros> ParseUsdc(std::string_view s) {
  if (s.empty()) return std::nullopt;
  size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (whole.empty() || frac.size() > 6 || (dot != std::string_view::npos && frac.empty())) {
    return std::nullopt;
  }
  Micros w = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    if (w > (std::numeric_limits<Micros>::max() / kMicrosPerUsdc - 9) / 10) return std::nullopt;
    w = w * 10 + (c - '0');
  }
  Micros f = 0;
  for (size_t i = 0; i < 6; ++i) {
    char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    f = f * 10 + (c - '0');
  }
  return w * kMicrosPerUsdc + f;
}

std::string FormatUsdc(Micros m) {
  bool neg = m < 0;
  unsigned long long u = neg ? 0ULL - static_cast<unsigned long long>(m)
                             : static_cast<unsigned long long>(m);
  std::string frac = std::to_string(u % kMicrosPerUsdc);
  frac.insert(0, 6 - frac.size(), '0');
  return (neg ? "-" : "") + std::to_string(u / kMicrosPerUsdc) + "." + frac;
}

}  // namespace gpunex
