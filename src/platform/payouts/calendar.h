// When payouts are made (PAY-1, SPEC §13a; docs/payouts.md): weekly every Monday 00:00
// UTC, monthly on the first business day of the month (Monday to Friday, minus the
// configured holidays). A run is named by its date ("as of"); it pays what is available
// when it is planned (at or after 00:00 UTC of that date: a run started late pays what
// was released until then).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/business_days.h"
#include "common/time.h"
#include "platform/payouts/payout.h"

namespace gpunex::platform::payouts {

// "2026-12-07" for the day holding t (UTC).
std::string DateOf(Timestamp t);
// 00:00 UTC of a YYYY-MM-DD date; nullopt when malformed or not a real date.
std::optional<Timestamp> ParseDate(std::string_view date);

bool IsMonday(Timestamp day);
// The first business day of the month holding `t`, at 00:00 UTC.
Timestamp FirstBusinessDayOfMonth(Timestamp t, const BusinessCalendar& calendar);

// Whether `as_of` (00:00 UTC of a day) is a run date of `schedule`.
bool IsRunDate(Schedule schedule, Timestamp as_of, const BusinessCalendar& calendar);

// The latest run date of `schedule` at or before `now` (00:00 UTC).
Timestamp LatestRunDate(Schedule schedule, Timestamp now, const BusinessCalendar& calendar);
// The first run date of `schedule` after `now`.
Timestamp NextRunDate(Schedule schedule, Timestamp now, const BusinessCalendar& calendar);

// The earnings period holding `now` for ERN-1: the week from Monday 00:00 UTC, or the
// calendar month; [from, to).
struct Period {
  Timestamp from, to;
};
Period PeriodOf(Schedule schedule, Timestamp now);

}  // namespace gpunex::platform::payouts
