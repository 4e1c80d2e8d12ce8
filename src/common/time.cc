// GCC 12 at -O2 reports a false "may be used uninitialized" inside date::parse (the
// warning is attributed to libstdc++'s chrono.h, so it is silenced for this file).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "common/time.h"

#include <date/date.h>

#include <sstream>

namespace gpunex {

UnixMicros NowMicros() { return ToUnixMicros(SystemClock().Now()); }

std::string FormatRfc3339(Timestamp t) {
  using namespace std::chrono;
  return date::format("%FT%TZ", floor<milliseconds>(t));
}

std::optional<Timestamp> ParseRfc3339(std::string_view s) {
  std::istringstream in{std::string(s)};
  date::sys_time<std::chrono::microseconds> tp;
  if (s.ends_with('Z') || s.ends_with('z')) {
    in >> date::parse("%FT%TZ", tp);
  } else {
    in >> date::parse("%FT%T%Ez", tp);
  }
  if (in.fail()) return std::nullopt;
  in.peek();
  if (!in.eof()) return std::nullopt;
  return tp;
}

namespace {
class RealClock final : public Clock {
 public:
  Timestamp Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};
}  // namespace

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

}  // namespace gpunex
