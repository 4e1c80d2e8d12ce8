#include "platform/availability/schedule.h"

#include <date/tz.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace gpunex::platform::availability {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

// ISO weekday index (0 = Monday) of a day name; -1 when unknown.
int DayIndex(std::string_view d) {
  auto it = std::find(kDays.begin(), kDays.end(), d);
  return it == kDays.end() ? -1 : static_cast<int>(it - kDays.begin());
}

Timestamp ToUtc(const date::time_zone* zone, date::local_time<std::chrono::minutes> t) {
  const date::local_info info = zone->get_info(t);
  if (info.result == date::local_info::nonexistent) {
    // In the gap the clocks skip: the window starts (or ends) at the jump.
    return std::chrono::time_point_cast<Duration>(info.second.begin);
  }
  // Unique, or ambiguous (clocks go back): the first occurrence.
  return std::chrono::time_point_cast<Duration>(
      date::sys_seconds((t - info.first.offset).time_since_epoch()));
}

std::vector<Interval> Merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start < b.start || (a.start == b.start && a.end < b.end);
  });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) {
      out.back().end = std::max(out.back().end, i.end);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

}  // namespace

std::vector<Interval> ScheduledIntervals(const Schedule& s, Timestamp from, Timestamp to) {
  if (to <= from) return {};
  if (s.always) return {{from, to}};
  const date::time_zone* zone = date::locate_zone(s.timezone);
  // Local days from two before `from` (a window starting then may still run) to one after.
  const auto local_from = zone->to_local(from);
  const auto local_to = zone->to_local(to);
  const date::local_days first = date::floor<date::days>(local_from) - date::days(2);
  const date::local_days last = date::floor<date::days>(local_to) + date::days(1);
  std::vector<Interval> raw;
  for (date::local_days day = first; day <= last; day += date::days(1)) {
    const int weekday = static_cast<int>(date::weekday(day).iso_encoding()) - 1;
    for (const applications::Window& w : s.windows) {
      bool starts_today = false;
      for (const std::string& d : w.days) starts_today |= DayIndex(d) == weekday;
      if (!starts_today) continue;
      const int start_min = applications::ParseClockTime(w.start, false);
      int end_min = applications::ParseClockTime(w.end, true);
      if (start_min < 0 || end_min < 0) continue;
      if (end_min <= start_min) end_min += 24 * 60;  // runs past midnight
      const Timestamp a = ToUtc(zone, day + std::chrono::minutes(start_min));
      const Timestamp b = ToUtc(zone, day + std::chrono::minutes(end_min));
      const Timestamp lo = std::max(a, from);
      const Timestamp hi = std::min(b, to);
      if (lo < hi) raw.push_back({lo, hi});
    }
  }
  return Merge(std::move(raw));
}

ScheduleState StateAt(const Schedule& s, Timestamp now) {
  if (s.always) return {true, std::nullopt};
  const Timestamp horizon = now + 8 * kOneDay;
  const std::vector<Interval> iv = ScheduledIntervals(s, now, horizon);
  ScheduleState st;
  if (!iv.empty() && iv.front().start == now) {
    st.inside = true;
    if (iv.front().end < horizon) st.next_change = iv.front().end;
  } else {
    st.inside = false;
    if (!iv.empty()) st.next_change = iv.front().start;
  }
  return st;
}

Duration Overlap(const std::vector<Interval>& intervals, Timestamp from, Timestamp to) {
  Duration total{0};
  for (const Interval& i : intervals) {
    const Timestamp lo = std::max(i.start, from);
    const Timestamp hi = std::min(i.end, to);
    if (lo < hi) total += hi - lo;
  }
  return total;
}

std::vector<Interval> Intersect(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const Timestamp lo = std::max(a[i].start, b[j].start);
    const Timestamp hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

}  // namespace gpunex::platform::availability
