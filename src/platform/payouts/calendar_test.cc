#include "platform/payouts/calendar.h"

#include <gtest/gtest.h>

#include "platform/payouts/payout.h"

namespace gpunex::platform::payouts {
namespace {

Timestamp At(const char* rfc3339) { return *ParseRfc3339(rfc3339); }

TEST(PayoutCalendar, WeeklyRunsAreMondays) {
  const BusinessCalendar cal = BusinessCalendar::Create({}).value();
  // 2026-12-07 is a Monday.
  EXPECT_TRUE(IsRunDate(Schedule::kWeekly, *ParseDate("2026-12-07"), cal));
  EXPECT_FALSE(IsRunDate(Schedule::kWeekly, *ParseDate("2026-12-08"), cal));
  EXPECT_EQ(DateOf(LatestRunDate(Schedule::kWeekly, At("2026-12-09T15:00:00Z"), cal)),
            "2026-12-07");
  EXPECT_EQ(DateOf(LatestRunDate(Schedule::kWeekly, At("2026-12-07T00:00:00Z"), cal)),
            "2026-12-07");
  EXPECT_EQ(DateOf(NextRunDate(Schedule::kWeekly, At("2026-12-07T00:00:00Z"), cal)), "2026-12-14");
  EXPECT_EQ(DateOf(NextRunDate(Schedule::kWeekly, At("2026-12-06T23:59:59Z"), cal)), "2026-12-07");
}

TEST(PayoutCalendar, MonthlyRunsAreOnTheFirstBusinessDayAfterWeekendsAndHolidays) {
  // 2026-11-01 is a Sunday: Monday the 2nd. 2027-01-01 is a Friday and a holiday: Monday
  // the 4th.
  const BusinessCalendar cal = BusinessCalendar::Create({"2027-01-01"}).value();
  EXPECT_EQ(DateOf(FirstBusinessDayOfMonth(At("2026-11-20T10:00:00Z"), cal)), "2026-11-02");
  EXPECT_EQ(DateOf(FirstBusinessDayOfMonth(At("2027-01-15T10:00:00Z"), cal)), "2027-01-04");
  EXPECT_TRUE(IsRunDate(Schedule::kMonthly, *ParseDate("2027-01-04"), cal));
  EXPECT_FALSE(IsRunDate(Schedule::kMonthly, *ParseDate("2027-01-01"), cal));
  EXPECT_EQ(DateOf(LatestRunDate(Schedule::kMonthly, At("2027-01-02T00:00:00Z"), cal)),
            "2026-12-01");
  EXPECT_EQ(DateOf(NextRunDate(Schedule::kMonthly, At("2026-12-01T00:00:00Z"), cal)), "2027-01-04");
}

TEST(PayoutCalendar, PeriodsAreTheWeekFromMondayAndTheMonth) {
  Period w = PeriodOf(Schedule::kWeekly, At("2026-12-09T15:00:00Z"));
  EXPECT_EQ(DateOf(w.from), "2026-12-07");
  EXPECT_EQ(DateOf(w.to), "2026-12-14");
  Period m = PeriodOf(Schedule::kMonthly, At("2026-12-31T23:00:00Z"));
  EXPECT_EQ(DateOf(m.from), "2026-12-01");
  EXPECT_EQ(DateOf(m.to), "2027-01-01");
}

TEST(PayoutCalendar, ParsesOnlyRealDates) {
  EXPECT_TRUE(ParseDate("2028-02-29"));
  EXPECT_FALSE(ParseDate("2027-02-29"));
  EXPECT_FALSE(ParseDate("2026-13-01"));
  EXPECT_FALSE(ParseDate("2026-1-01"));
  EXPECT_FALSE(ParseDate("26-01-01xx"));
}

}  // namespace
}  // namespace gpunex::platform::payouts
