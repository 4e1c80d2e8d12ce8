// Time in gpunex. An instant is a Timestamp: microseconds since the Unix epoch (UTC), a
// std::chrono time point so that instants and durations are distinct types and cannot be
// mixed up or added by mistake. Both store backends hold it exactly as an integer
// (ToUnixMicros); the wire format is RFC 3339 UTC with millisecond precision
// ("2026-11-29T16:00:00.000Z").
//
// Domain code never reads the system clock itself: it asks the Clock it was given, so
// that tests move time with a FakeClock (common/testing/fake_clock.h) and weekly payouts,
// 24 h holds and 30-day windows are tested without waiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpunex {

using Duration = std::chrono::microseconds;
using Timestamp = std::chrono::sys_time<std::chrono::microseconds>;

inline constexpr Duration kOneSecond = std::chrono::seconds(1);
inline constexpr Duration kOneMinute = std::chrono::minutes(1);
inline constexpr Duration kOneHour = std::chrono::hours(1);
inline constexpr Duration kOneDay = std::chrono::hours(24);

// The integer the store keeps for a Timestamp, and back.
constexpr int64_t ToUnixMicros(Timestamp t) { return t.time_since_epoch().count(); }
constexpr Timestamp FromUnixMicros(int64_t micros) { return Timestamp(Duration(micros)); }

// A whole number of seconds as a Duration (configuration values, protocol fields).
constexpr Duration Seconds(int64_t s) { return std::chrono::seconds(s); }

// Integer microseconds since the epoch read straight off the wall clock, for log lines
// and the agent's own records. Platform code takes a Timestamp from its Clock instead.
using UnixMicros = int64_t;
UnixMicros NowMicros();

// "2026-11-29T16:00:00.000Z".
std::string FormatRfc3339(Timestamp t);

// Parses RFC 3339 with a 'Z' or numeric offset; nullopt when malformed.
std::optional<Timestamp> ParseRfc3339(std::string_view s);

// Where "now" comes from. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp Now() const = 0;
};

// The process-wide real (wall) clock.
const Clock& SystemClock();

}  // namespace gpunex
