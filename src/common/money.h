// Money in gpunex (LED-1): integer micro-USDC (1 USDC = 1'000'000 micro-USDC, the six
// decimals of USDC on Solana) in one type, Usdc, never floating point.
//
// Arithmetic is checked: a sum, difference or product that does not fit in 64 bits is an
// error (kOutOfRange), never a wrap. Usage is priced in 128-bit integers and rounded down
// once, on the total (LED-2):
//   owed(t) = floor(hourly_rate × quantity × billed_seconds / 3600)
//   share   = floor(amount × basis_points / 10000)      (commission, LED-4)
// so that charging the difference between two totals never drifts.
//
// Thread-safety: a value type.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpunex {

class Usdc {
 public:
  static constexpr int64_t kMicrosPerUsdc = 1'000'000;

  constexpr Usdc() = default;
  static constexpr Usdc Micros(int64_t micros) { return Usdc(micros); }
  static constexpr Usdc Zero() { return Usdc(0); }

  constexpr int64_t micros() const { return micros_; }
  constexpr bool is_negative() const { return micros_ < 0; }
  constexpr bool is_positive() const { return micros_ > 0; }

  friend constexpr bool operator==(Usdc, Usdc) = default;
  friend constexpr auto operator<=>(Usdc, Usdc) = default;

  // Fail with kOutOfRange when the result does not fit.
  StatusOr<Usdc> Plus(Usdc other) const;
  StatusOr<Usdc> Minus(Usdc other) const;
  StatusOr<Usdc> Times(int64_t factor) const;

  // floor(hourly_rate × quantity × seconds / 3600). Fails with kOutOfRange when an
  // argument is negative or the result does not fit.
  static StatusOr<Usdc> ForUsage(Usdc hourly_rate, int64_t quantity, std::chrono::seconds billed);

  // floor(this × basis_points / 10000), for 0 <= basis_points <= 10000. Fails with
  // kOutOfRange for a negative amount or basis points outside that range.
  StatusOr<Usdc> Share(int64_t basis_points) const;

  // Parses a decimal USDC amount ("2.20", "0.000001", "15") exactly; nullopt when it is
  // malformed, negative, has more than 6 decimals or does not fit.
  static std::optional<Usdc> Parse(std::string_view s);
  // "2.200000" style, always 6 decimals ("-0.000005" when negative).
  std::string ToString() const;

 private:
  explicit constexpr Usdc(int64_t micros) : micros_(micros) {}
  int64_t micros_ = 0;
};

}  // namespace gpunex
