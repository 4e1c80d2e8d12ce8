// Money is integer micro-USDC (1 USDC = 1'000'000), never floating point (LED-1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpunex {

using Micros = int64_t;  // micro-USDC
constexpr Micros kMicrosPerUsdc = 1'000'000;

// Parses a decimal USDC amount ("2.20", "0.000001", "15") exactly; nullopt when it is
// malformed, negative, has more than 6 decimals or overflows.
std::optional<Micros> ParseUsdc(std::string_view s);

// "2.200000" style, always 6 decimals.
std::string FormatUsdc(Micros m);

}  // namespace gpunex
