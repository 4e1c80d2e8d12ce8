#include "platform/availability/schedule.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::platform::availability {

// For readable failures (found by argument-dependent lookup, so in this namespace).
[[maybe_unused]] static void PrintTo(const Interval& i, std::ostream* os) {
  *os << "[" << FormatRfc3339(i.start) << ", " << FormatRfc3339(i.end) << ")";
}

namespace {

Timestamp At(std::string_view rfc3339) { return ParseRfc3339(rfc3339).value(); }

Interval Iv(std::string_view start, std::string_view end) { return {At(start), At(end)}; }

Schedule Weekly(std::vector<applications::Window> windows, std::string timezone = "Europe/Rome") {
  Schedule s;
  s.always = false;
  s.timezone = std::move(timezone);
  s.windows = std::move(windows);
  return s;
}

const std::vector<std::string> kWeekdays = {"mon", "tue", "wed", "thu", "fri"};
const std::vector<std::string> kEveryDay = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

// ------------------------------------------------------------------ ScheduledIntervals

TEST(ScheduleIntervals, AlwaysIsTheWholeRange) {
  const Schedule always;
  ASSERT_TRUE(always.always);
  const Timestamp a = At("2026-03-01T00:00:00Z"), b = At("2026-04-01T00:00:00Z");
  EXPECT_EQ(ScheduledIntervals(always, a, b), (std::vector<Interval>{{a, b}}));
  EXPECT_TRUE(ScheduledIntervals(always, a, a).empty());
  EXPECT_TRUE(ScheduledIntervals(Weekly({{kEveryDay, "08:00", "20:00"}}), a, a).empty());
}

TEST(ScheduleIntervals, WeekdaysInRomeInWinterAndSummer) {
  const Schedule s = Weekly({{kWeekdays, "08:00", "20:00"}});
  // Winter (CET, UTC+1): Monday 12 January 2026 to the next Monday.
  EXPECT_EQ(ScheduledIntervals(s, At("2026-01-12T00:00:00Z"), At("2026-01-19T00:00:00Z")),
            (std::vector<Interval>{
                Iv("2026-01-12T07:00:00Z", "2026-01-12T19:00:00Z"),
                Iv("2026-01-13T07:00:00Z", "2026-01-13T19:00:00Z"),
                Iv("2026-01-14T07:00:00Z", "2026-01-14T19:00:00Z"),
                Iv("2026-01-15T07:00:00Z", "2026-01-15T19:00:00Z"),
                Iv("2026-01-16T07:00:00Z", "2026-01-16T19:00:00Z"),
            }));
  // Summer (CEST, UTC+2): Monday 13 July 2026.
  const std::vector<Interval> summer =
      ScheduledIntervals(s, At("2026-07-13T00:00:00Z"), At("2026-07-20T00:00:00Z"));
  ASSERT_EQ(summer.size(), 5u);
  EXPECT_EQ(summer.front(), Iv("2026-07-13T06:00:00Z", "2026-07-13T18:00:00Z"));
  EXPECT_EQ(summer.back(), Iv("2026-07-17T06:00:00Z", "2026-07-17T18:00:00Z"));
  // Cut at the range's ends.
  EXPECT_EQ(ScheduledIntervals(s, At("2026-01-12T10:00:00Z"), At("2026-01-13T08:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-12T10:00:00Z", "2026-01-12T19:00:00Z"),
                                   Iv("2026-01-13T07:00:00Z", "2026-01-13T08:00:00Z")}));
  // The weekend: nothing.
  EXPECT_TRUE(
      ScheduledIntervals(s, At("2026-01-17T00:00:00Z"), At("2026-01-19T00:00:00Z")).empty());
  // Another zone: New York 09:00–17:00 is 14:00–22:00 UTC in January (EST).
  const Schedule ny = Weekly({{{"mon"}, "09:00", "17:00"}}, "America/New_York");
  EXPECT_EQ(ScheduledIntervals(ny, At("2026-01-12T00:00:00Z"), At("2026-01-13T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-12T14:00:00Z", "2026-01-12T22:00:00Z")}));
}

TEST(ScheduleIntervals, AWindowEndingBeforeItsStartRunsPastMidnight) {
  // "fri 22:00–06:00" is Friday 22:00 → Saturday 06:00 local (21:00 → 05:00 UTC in winter).
  const Schedule s = Weekly({{{"fri"}, "22:00", "06:00"}});
  EXPECT_EQ(ScheduledIntervals(s, At("2026-01-12T00:00:00Z"), At("2026-01-19T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-16T21:00:00Z", "2026-01-17T05:00:00Z")}));
  // A range that begins on Saturday still sees the part of Friday's window after it.
  EXPECT_EQ(ScheduledIntervals(s, At("2026-01-17T02:00:00Z"), At("2026-01-18T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-17T02:00:00Z", "2026-01-17T05:00:00Z")}));
  // Nothing starts on Saturday itself.
  EXPECT_TRUE(
      ScheduledIntervals(s, At("2026-01-17T05:00:00Z"), At("2026-01-23T00:00:00Z")).empty());
  // An end of 24:00 is midnight of the next day.
  const Schedule late = Weekly({{{"sun"}, "20:00", "24:00"}});
  EXPECT_EQ(ScheduledIntervals(late, At("2026-01-12T00:00:00Z"), At("2026-01-19T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-18T19:00:00Z", "2026-01-18T23:00:00Z")}));
}

TEST(ScheduleIntervals, SpringForwardNightIsAnHourShorter) {
  // 29 March 2026 in Rome: 02:00 CET becomes 03:00 CEST (01:00 UTC).
  const Schedule s = Weekly({{kEveryDay, "01:00", "05:00"}});
  const std::vector<Interval> iv =
      ScheduledIntervals(s, At("2026-03-28T00:00:00Z"), At("2026-03-30T12:00:00Z"));
  EXPECT_EQ(iv, (std::vector<Interval>{
                    Iv("2026-03-28T00:00:00Z", "2026-03-28T04:00:00Z"),  // CET: 4 h
                    Iv("2026-03-29T00:00:00Z", "2026-03-29T03:00:00Z"),  // the night: 3 h
                    Iv("2026-03-29T23:00:00Z", "2026-03-30T03:00:00Z"),  // CEST: 4 h
                }));
  EXPECT_EQ(iv[1].length(), 3 * kOneHour);
}

TEST(ScheduleIntervals, FallBackNightIsAnHourLonger) {
  // 25 October 2026 in Rome: 03:00 CEST becomes 02:00 CET (01:00 UTC).
  const Schedule s = Weekly({{kEveryDay, "01:00", "05:00"}});
  const std::vector<Interval> iv =
      ScheduledIntervals(s, At("2026-10-23T12:00:00Z"), At("2026-10-27T00:00:00Z"));
  EXPECT_EQ(iv, (std::vector<Interval>{
                    Iv("2026-10-23T23:00:00Z", "2026-10-24T03:00:00Z"),  // CEST: 4 h
                    Iv("2026-10-24T23:00:00Z", "2026-10-25T04:00:00Z"),  // the night: 5 h
                    Iv("2026-10-26T00:00:00Z", "2026-10-26T04:00:00Z"),  // CET: 4 h
                }));
  EXPECT_EQ(iv[1].length(), 5 * kOneHour);
}

TEST(ScheduleIntervals, AWindowStartingInTheGapStartsAtTheJump) {
  // 02:30 does not exist on 29 March 2026 in Rome: the window starts at 03:00 CEST.
  const Schedule s = Weekly({{{"sun"}, "02:30", "05:00"}});
  EXPECT_EQ(ScheduledIntervals(s, At("2026-03-28T00:00:00Z"), At("2026-03-30T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-03-29T01:00:00Z", "2026-03-29T03:00:00Z")}));
  // A window ending in the gap ends at the jump too.
  const Schedule ends = Weekly({{{"sun"}, "00:00", "02:30"}});
  EXPECT_EQ(ScheduledIntervals(ends, At("2026-03-28T00:00:00Z"), At("2026-03-30T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z")}));
  // A local time that happens twice (02:30 on 25 October) is its first occurrence (CEST).
  const Schedule twice = Weekly({{{"sun"}, "02:30", "04:00"}});
  EXPECT_EQ(ScheduledIntervals(twice, At("2026-10-24T00:00:00Z"), At("2026-10-26T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-10-25T00:30:00Z", "2026-10-25T03:00:00Z")}));
}

TEST(ScheduleIntervals, OverlappingAndTouchingWindowsAreMerged) {
  const Schedule overlap = Weekly(
      {{{"mon"}, "08:00", "12:00"}, {{"mon"}, "11:00", "14:00"}, {{"mon"}, "09:00", "10:00"}});
  EXPECT_EQ(ScheduledIntervals(overlap, At("2026-01-12T00:00:00Z"), At("2026-01-13T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-12T07:00:00Z", "2026-01-12T13:00:00Z")}));
  const Schedule touching = Weekly({{{"mon"}, "08:00", "10:00"}, {{"mon"}, "10:00", "12:00"}});
  EXPECT_EQ(ScheduledIntervals(touching, At("2026-01-12T00:00:00Z"), At("2026-01-13T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-12T07:00:00Z", "2026-01-12T11:00:00Z")}));
  // Past midnight into the next day's window.
  const Schedule night = Weekly({{{"mon"}, "20:00", "02:00"}, {{"tue"}, "00:00", "04:00"}});
  EXPECT_EQ(ScheduledIntervals(night, At("2026-01-12T00:00:00Z"), At("2026-01-14T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-01-12T19:00:00Z", "2026-01-13T03:00:00Z")}));
  // Every day 00:00–24:00: one interval, across a DST change too.
  const Schedule full = Weekly({{kEveryDay, "00:00", "24:00"}});
  EXPECT_EQ(ScheduledIntervals(full, At("2026-03-25T00:00:00Z"), At("2026-04-02T00:00:00Z")),
            (std::vector<Interval>{Iv("2026-03-25T00:00:00Z", "2026-04-02T00:00:00Z")}));
}

// ------------------------------------------------------------------ StateAt

TEST(ScheduleStateAt, AlwaysIsInsideWithNoChange) {
  const ScheduleState st = StateAt(Schedule{}, At("2026-01-12T10:00:00Z"));
  EXPECT_TRUE(st.inside);
  EXPECT_FALSE(st.next_change.has_value());
}

TEST(ScheduleStateAt, InsideAndOutsideWithTheNextChange) {
  const Schedule s = Weekly({{kWeekdays, "08:00", "20:00"}});
  // Monday 12:00 Rome: inside until 20:00 Rome.
  ScheduleState st = StateAt(s, At("2026-01-12T11:00:00Z"));
  EXPECT_TRUE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-12T19:00:00Z"));
  // Monday 07:00 Rome: outside until 08:00.
  st = StateAt(s, At("2026-01-12T06:00:00Z"));
  EXPECT_FALSE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-12T07:00:00Z"));
  // At the start instant: inside; at the end instant: outside until the next morning.
  st = StateAt(s, At("2026-01-12T07:00:00Z"));
  EXPECT_TRUE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-12T19:00:00Z"));
  st = StateAt(s, At("2026-01-12T19:00:00Z"));
  EXPECT_FALSE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-13T07:00:00Z"));
  // Friday evening: outside until Monday 08:00.
  st = StateAt(s, At("2026-01-16T21:00:00Z"));
  EXPECT_FALSE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-19T07:00:00Z"));
  // Saturday 03:00 Rome inside "fri 22:00–06:00": inside until 06:00 Rome.
  st = StateAt(Weekly({{{"fri"}, "22:00", "06:00"}}), At("2026-01-17T02:00:00Z"));
  EXPECT_TRUE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-17T05:00:00Z"));
  // The Friday before the spring change: opens Monday 08:00 CEST (06:00 UTC).
  st = StateAt(s, At("2026-03-27T20:00:00Z"));
  EXPECT_FALSE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-03-30T06:00:00Z"));
}

TEST(ScheduleStateAt, FullDaysOnEveryDayAreInsideWithNoChange) {
  const Schedule s = Weekly({{kEveryDay, "00:00", "24:00"}});
  for (const char* now : {"2026-01-12T11:00:00Z", "2026-03-28T23:30:00Z", "2026-10-24T23:00:00Z"}) {
    const ScheduleState st = StateAt(s, At(now));
    EXPECT_TRUE(st.inside) << now;
    EXPECT_FALSE(st.next_change.has_value()) << now;
  }
  // Six full days: inside, and the change is when Sunday begins (Rome).
  const Schedule six = Weekly({{{"mon", "tue", "wed", "thu", "fri", "sat"}, "00:00", "24:00"}});
  const ScheduleState st = StateAt(six, At("2026-01-12T11:00:00Z"));
  EXPECT_TRUE(st.inside);
  EXPECT_EQ(st.next_change, At("2026-01-17T23:00:00Z"));
}

// ------------------------------------------------------------------ Intersect, Overlap

TEST(ScheduleIntersect, KeepsOnlyWhatBothHold) {
  const std::vector<Interval> a = {Iv("2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z"),
                                   Iv("2026-01-01T12:00:00Z", "2026-01-01T20:00:00Z")};
  const std::vector<Interval> b = {Iv("2026-01-01T05:00:00Z", "2026-01-01T13:00:00Z"),
                                   Iv("2026-01-01T15:00:00Z", "2026-01-01T16:00:00Z"),
                                   Iv("2026-01-01T19:00:00Z", "2026-01-02T00:00:00Z")};
  const std::vector<Interval> want = {Iv("2026-01-01T05:00:00Z", "2026-01-01T10:00:00Z"),
                                      Iv("2026-01-01T12:00:00Z", "2026-01-01T13:00:00Z"),
                                      Iv("2026-01-01T15:00:00Z", "2026-01-01T16:00:00Z"),
                                      Iv("2026-01-01T19:00:00Z", "2026-01-01T20:00:00Z")};
  EXPECT_EQ(Intersect(a, b), want);
  EXPECT_EQ(Intersect(b, a), want);
  EXPECT_TRUE(Intersect(a, {}).empty());
  EXPECT_TRUE(Intersect({}, b).empty());
  // Touching is not overlapping.
  EXPECT_TRUE(Intersect({Iv("2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z")},
                        {Iv("2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z")})
                  .empty());
  // With itself: itself.
  EXPECT_EQ(Intersect(a, a), a);
}

TEST(ScheduleOverlap, TotalLengthWithinTheRange) {
  const std::vector<Interval> iv = {Iv("2026-01-01T00:00:00Z", "2026-01-01T10:00:00Z"),
                                    Iv("2026-01-01T12:00:00Z", "2026-01-01T20:00:00Z")};
  EXPECT_EQ(Overlap(iv, At("2026-01-01T00:00:00Z"), At("2026-01-02T00:00:00Z")), 18 * kOneHour);
  EXPECT_EQ(Overlap(iv, At("2026-01-01T09:00:00Z"), At("2026-01-01T13:30:00Z")),
            2 * kOneHour + 30 * kOneMinute);
  EXPECT_EQ(Overlap(iv, At("2026-01-01T10:00:00Z"), At("2026-01-01T12:00:00Z")), Duration{0});
  EXPECT_EQ(Overlap({}, At("2026-01-01T00:00:00Z"), At("2026-01-02T00:00:00Z")), Duration{0});
  // Of a week's schedule in Rome: 5 × 12 h.
  const Schedule s = Weekly({{kWeekdays, "08:00", "20:00"}});
  const Timestamp from = At("2026-01-12T00:00:00Z"), to = At("2026-01-19T00:00:00Z");
  EXPECT_EQ(Overlap(ScheduledIntervals(s, from, to), from, to), 60 * kOneHour);
}

}  // namespace
}  // namespace gpunex::platform::availability
