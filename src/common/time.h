// Time in gpunex: instants are int64 microseconds since the Unix epoch (UTC), which
// both store backends hold exactly; the wire format is RFC 3339 UTC with
// millisecond precision ("2026-11-29T16:00:00.000Z").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpunex {

using UnixMicros = int64_t;

constexpr UnixMicros kMicrosPerSecond = 1'000'000;
constexpr UnixMicros kMicrosPerDay = 86'400 * kMicrosPerSecond;

// Wall-clock now.
UnixMicros NowMicros();

// "2026-11-29T16:00:00.000Z".
std::string FormatRfc3339(UnixMicros t);

// Parses RFC 3339 with a 'Z' or numeric offset; nullopt when malformed.
std::optional<UnixMicros> ParseRfc3339(std::string_view s);

// A clock that tests can move. Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual UnixMicros Now() const = 0;
};
// The process-wide real clock.
const Clock& SystemClock();

}  // namespace gpunex
