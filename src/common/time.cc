// GCC 12 at -O2 reports a false "may be used uninitialized" inside date::parse (the
// warning is attributed to libstdc++'s chrono.h, so it is silenced for this file).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "common/time.h"

#include <date/date.h>

#include <chrono>
#include <sstream>

namespace gpunex {

UnixMicros NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string FormatRfc3339(UnixMicros t) {
  using namespace std::chrono;
  sys_time<milliseconds> tp{duration_cast<milliseconds>(microseconds(t))};
  return date::format("%FT%TZ", tp);
}

std::optional<UnixMicros> ParseRfc3339(std::string_view s) {
  using namespace std::chrono;
  std::istringstream in{std::string(s)};
  date::sys_time<microseconds> tp;
  if (s.ends_with('Z') || s.ends_with('z')) {
    in >> date::parse("%FT%TZ", tp);
  } else {
    in >> date::parse("%FT%T%Ez", tp);
  }
  if (in.fail()) return std::nullopt;
  in.peek();
  if (!in.eof()) return std::nullopt;
  return tp.time_since_epoch().count();
}

namespace {
class RealClock final : public Clock {
 public:
  UnixMicros Now() const override { return NowMicros(); }
};
}  // namespace

const Clock& SystemClock() {
  static const RealClock clock;
  return clock;
}

}  // namespace gpunex
