#include "platform/payouts/calendar.h"

#include <date/date.h>

#include <chrono>

#include "platform/payouts/payout.h"

namespace gpunex::platform::payouts {
namespace {

date::sys_days DayOf(Timestamp t) { return std::chrono::floor<date::days>(t); }
Timestamp Midnight(date::sys_days d) { return Timestamp(d); }

}  // namespace

std::string DateOf(Timestamp t) { return date::format("%F", DayOf(t)); }

std::optional<Timestamp> ParseDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
  }
  const int y = std::stoi(std::string(s.substr(0, 4)));
  const unsigned m = static_cast<unsigned>(std::stoi(std::string(s.substr(5, 2))));
  const unsigned d = static_cast<unsigned>(std::stoi(std::string(s.substr(8, 2))));
  const date::year_month_day ymd{date::year(y), date::month(m), date::day(d)};
  if (!ymd.ok()) return std::nullopt;
  return Midnight(date::sys_days(ymd));
}

bool IsMonday(Timestamp day) { return date::weekday(DayOf(day)) == date::Monday; }

Timestamp FirstBusinessDayOfMonth(Timestamp t, const BusinessCalendar& calendar) {
  const date::year_month_day ymd(DayOf(t));
  date::sys_days d = date::sys_days(ymd.year() / ymd.month() / date::day(1));
  // A month has business days unless every weekday is a holiday; stop after the month.
  for (int i = 0; i < 31; ++i, d += date::days(1)) {
    if (calendar.IsBusinessDay(d.time_since_epoch().count())) return Midnight(d);
  }
  return Midnight(date::sys_days(ymd.year() / ymd.month() / date::day(1)));
}

bool IsRunDate(Schedule schedule, Timestamp as_of, const BusinessCalendar& calendar) {
  if (schedule == Schedule::kWeekly) return IsMonday(as_of);
  return FirstBusinessDayOfMonth(as_of, calendar) == Midnight(DayOf(as_of));
}

Timestamp LatestRunDate(Schedule schedule, Timestamp now, const BusinessCalendar& calendar) {
  const date::sys_days today = DayOf(now);
  if (schedule == Schedule::kWeekly) {
    // Days since Monday: weekday index with Monday = 0.
    const unsigned since = (date::weekday(today).c_encoding() + 6) % 7;
    return Midnight(today - date::days(since));
  }
  Timestamp first = FirstBusinessDayOfMonth(now, calendar);
  if (first <= Midnight(today)) return first;
  const date::year_month_day ymd(today);
  const date::year_month prev = date::year_month(ymd.year(), ymd.month()) - date::months(1);
  return FirstBusinessDayOfMonth(Midnight(date::sys_days(prev / date::day(1))), calendar);
}

Timestamp NextRunDate(Schedule schedule, Timestamp now, const BusinessCalendar& calendar) {
  const date::sys_days today = DayOf(now);
  if (schedule == Schedule::kWeekly) {
    const unsigned until = 7 - (date::weekday(today).c_encoding() + 6) % 7;
    return Midnight(today + date::days(until));
  }
  Timestamp first = FirstBusinessDayOfMonth(now, calendar);
  if (first > now) return first;
  const date::year_month_day ymd(today);
  const date::year_month next = date::year_month(ymd.year(), ymd.month()) + date::months(1);
  return FirstBusinessDayOfMonth(Midnight(date::sys_days(next / date::day(1))), calendar);
}

Period PeriodOf(Schedule schedule, Timestamp now) {
  const date::sys_days today = DayOf(now);
  if (schedule == Schedule::kWeekly) {
    const unsigned since = (date::weekday(today).c_encoding() + 6) % 7;
    const date::sys_days from = today - date::days(since);
    return {Midnight(from), Midnight(from + date::days(7))};
  }
  const date::year_month_day ymd(today);
  const date::year_month ym(ymd.year(), ymd.month());
  return {Midnight(date::sys_days(ym / date::day(1))),
          Midnight(date::sys_days((ym + date::months(1)) / date::day(1)))};
}

}  // namespace gpunex::platform::payouts
