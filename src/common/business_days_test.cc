#include "common/business_days.h"

#include <gtest/gtest.h>

namespace gpunex {
namespace {

Timestamp At(const char* s) { return ParseRfc3339(s).value(); }

TEST(BusinessCalendar, CountsWeekdaysAfterSubmission) {
  auto cal = BusinessCalendar::Create({}).value();
  // 2026-11-27 is a Friday.
  EXPECT_EQ(cal.BusinessDaysBetween(At("2026-11-27T10:00:00Z"), At("2026-11-27T18:00:00Z")), 0);
  EXPECT_EQ(cal.BusinessDaysBetween(At("2026-11-27T10:00:00Z"), At("2026-11-29T18:00:00Z")), 0);
  EXPECT_EQ(cal.BusinessDaysBetween(At("2026-11-27T10:00:00Z"), At("2026-11-30T09:00:00Z")), 1);
  EXPECT_EQ(cal.BusinessDaysBetween(At("2026-11-27T10:00:00Z"), At("2026-12-04T09:00:00Z")), 5);
}

TEST(BusinessCalendar, SkipsHolidays) {
  auto cal = BusinessCalendar::Create({"2026-12-25"}).value();
  // Thu 24 Dec to Mon 28 Dec: Fri 25 is a holiday, so only Monday counts.
  EXPECT_EQ(cal.BusinessDaysBetween(At("2026-12-24T10:00:00Z"), At("2026-12-28T10:00:00Z")), 1);
  EXPECT_FALSE(BusinessCalendar::Create({"25/12/2026"}).ok());
}

TEST(BusinessCalendar, DaysBeforeTheEpochFloor) {
  auto cal = BusinessCalendar::Create({}).value();
  // 1969-12-31 was a Wednesday, 1970-01-01 a Thursday: one business day between them.
  EXPECT_EQ(cal.BusinessDaysBetween(At("1969-12-31T23:00:00Z"), At("1970-01-01T01:00:00Z")), 1);
  EXPECT_EQ(cal.BusinessDaysBetween(At("1969-12-31T01:00:00Z"), At("1969-12-31T23:00:00Z")), 0);
}

}  // namespace
}  // namespace gpunex
