// GCC 12 at -O2 reports a false "may be used uninitialized" inside date::parse (the
// warning is attributed to libstdc++'s chrono.h, so it is silenced for this file). Clang
// has no such warning (and, with -Werror, refuses to silence an unknown one).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "common/business_days.h"

#include <date/date.h>

#include <chrono>
#include <sstream>

namespace gpunex {
namespace {

// Days since the epoch (UTC); floor, so that instants before the epoch land on the right day.
int64_t DayOf(Timestamp t) {
  return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
}

}  // namespace

StatusOr<BusinessCalendar> BusinessCalendar::Create(const std::vector<std::string>& holidays) {
  BusinessCalendar cal;
  for (const auto& h : holidays) {
    std::istringstream in(h);
    date::sys_days d;
    in >> date::parse("%F", d);
    if (in.fail()) return FieldError("review.holidays", "'" + h + "' is not a YYYY-MM-DD date");
    cal.holidays_.insert(d.time_since_epoch().count());
  }
  return cal;
}

bool BusinessCalendar::IsBusinessDay(int64_t day) const {
  // 1970-01-01 was a Thursday: weekday index with Monday = 0.
  int64_t wd = ((day % 7) + 7 + 3) % 7;
  return wd < 5 && !holidays_.count(day);
}

int BusinessCalendar::BusinessDaysBetween(Timestamp from, Timestamp to) const {
  int n = 0;
  int64_t last = DayOf(to);
  for (int64_t d = DayOf(from) + 1; d <= last && n < 100000; ++d) {
    if (IsBusinessDay(d)) ++n;
  }
  return n;
}

}  // namespace gpunex
