// A machine's availability schedule (PRC-2) as time: the weekly windows of a schedule, in
// its IANA time zone, turned into UTC intervals. Pure functions over values.
//
// The schedule has the shape of an application's availability (applications::Availability):
// "always", or weekly windows with the days they start on, a start and an end in local
// time. An end at or before the start runs past midnight into the next day. Local times
// become UTC through the zone's rules (howardhinnant date, the system's tz database):
//   - a local time that does not exist (the hour skipped when clocks go forward) maps to
//     the instant the clocks jump, so a window starting in the gap starts at the jump;
//   - a local time that happens twice (the hour repeated when clocks go back) maps to its
//     first occurrence.
// So a window 01:00–05:00 lasts 3 hours on the night clocks go forward and 5 on the
// night they go back. Overlapping windows are merged.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <vector>

#include "common/time.h"
#include "platform/applications/application.h"

namespace gpunex::platform::availability {

using Schedule = applications::Availability;

// [start, end), UTC.
struct Interval {
  Timestamp start;
  Timestamp end;

  Duration length() const { return end - start; }
  friend bool operator==(const Interval&, const Interval&) = default;
};

// The scheduled time within [from, to): sorted, disjoint, non-empty intervals (merged
// where windows touch or overlap). REQUIRES: the schedule validated
// (applications::ValidateAvailability) and from <= to.
std::vector<Interval> ScheduledIntervals(const Schedule& s, Timestamp from, Timestamp to);

// Where `now` stands in the schedule.
struct ScheduleState {
  bool inside = true;
  // When `inside` next changes; none when it does not within the next 8 days (an "always"
  // schedule, or one whose windows cover the whole week).
  std::optional<Timestamp> next_change;
};
ScheduleState StateAt(const Schedule& s, Timestamp now);

// The total length of `intervals` that lies within [from, to).
Duration Overlap(const std::vector<Interval>& intervals, Timestamp from, Timestamp to);

// `a` ∩ `b`, both sorted and disjoint.
std::vector<Interval> Intersect(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace gpunex::platform::availability
