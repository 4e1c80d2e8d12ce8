#include "common/money.h"

#include <limits>

namespace gpunex {
namespace {

// -Wpedantic: 128-bit integers are a GCC and clang extension.
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

StatusOr<Usdc> Fit(Int128 v, std::string_view what) {
  if (v > kMax || v < kMin) return OutOfRange(std::string(what) + " does not fit in micro-USDC");
  return Usdc::Micros(static_cast<int64_t>(v));
}

}  // namespace

StatusOr<Usdc> Usdc::Plus(Usdc other) const {
  return Fit(static_cast<Int128>(micros_) + other.micros_, "the sum");
}

StatusOr<Usdc> Usdc::Minus(Usdc other) const {
  return Fit(static_cast<Int128>(micros_) - other.micros_, "the difference");
}

StatusOr<Usdc> Usdc::Times(int64_t factor) const {
  return Fit(static_cast<Int128>(micros_) * factor, "the product");
}

StatusOr<Usdc> Usdc::ForUsage(Usdc hourly_rate, int64_t quantity, std::chrono::seconds billed) {
  if (hourly_rate.is_negative() || quantity < 0 || billed.count() < 0) {
    return OutOfRange(
        "usage is priced from a rate, a quantity and a duration that are not negative");
  }
  // At most (2^63)^3 / 3600 would overflow 128 bits; each factor is below 2^63, so check
  // the product of the first two before multiplying by the third.
  const UInt128 rate_qty =
      static_cast<UInt128>(hourly_rate.micros_) * static_cast<uint64_t>(quantity);
  const uint64_t s = static_cast<uint64_t>(billed.count());
  if (s != 0 && rate_qty > (~static_cast<UInt128>(0)) / s) {
    return OutOfRange("the usage does not fit in micro-USDC");
  }
  const UInt128 owed = rate_qty * s / 3600;
  if (owed > static_cast<UInt128>(kMax)) {
    return OutOfRange("the usage does not fit in micro-USDC");
  }
  return Usdc(static_cast<int64_t>(owed));
}

StatusOr<Usdc> Usdc::Share(int64_t basis_points) const {
  if (is_negative() || basis_points < 0 || basis_points > 10'000) {
    return OutOfRange("a share is 0 to 10000 basis points of an amount that is not negative");
  }
  return Usdc(static_cast<int64_t>(static_cast<Int128>(micros_) * basis_points / 10'000));
}

std::optional<Usdc> Usdc::Parse(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac =
      dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
  if (whole.empty() || frac.size() > 6 || (dot != std::string_view::npos && frac.empty())) {
    return std::nullopt;
  }
  Int128 v = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > kMax) return std::nullopt;
  }
  for (size_t i = 0; i < 6; ++i) {
    const char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > kMax) return std::nullopt;
  return Usdc(static_cast<int64_t>(v));
}

std::string Usdc::ToString() const {
  const bool neg = micros_ < 0;
  const unsigned long long u = neg ? 0ULL - static_cast<unsigned long long>(micros_)
                                   : static_cast<unsigned long long>(micros_);
  std::string frac = std::to_string(u % kMicrosPerUsdc);
  frac.insert(0, 6 - frac.size(), '0');
  return (neg ? "-" : "") + std::to_string(u / kMicrosPerUsdc) + "." + frac;
}

}  // namespace gpunex
