#include "platform/reliability/formula.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "platform/availability/schedule.h"

namespace gpunex::platform::reliability {
namespace {

using fleet::EndParty;

constexpr double kHalfLifeS = 7 * 24 * 3600.0;

// The score of a machine with U = B = 1 and no job endings: C is the prior, 0.95.
const double kNoJobsScore = 100 * std::pow(0.95, 0.3);

Timestamp At(std::string_view rfc3339) { return ParseRfc3339(rfc3339).value(); }

double SecondsOf(Duration d) { return std::chrono::duration<double>(d).count(); }

availability::Schedule Always() { return availability::Schedule{}; }

availability::Schedule Weekly(std::string timezone, std::vector<applications::Window> windows) {
  availability::Schedule s;
  s.always = false;
  s.timezone = std::move(timezone);
  s.windows = std::move(windows);
  return s;
}

// The weighted and unweighted scheduled and up time of the pieces of [from, to).
struct Tally {
  Duration scheduled{0};
  Duration up{0};
  Duration excused{0};
  double scheduled_w = 0;
  double up_w = 0;
};
Tally TallyOf(const TimeFacts& f, Timestamp from, Timestamp to, Timestamp now) {
  Tally t;
  for (const Piece& p : ClassifyTime(f, from, to)) {
    if (p.excused) t.excused += p.end - p.start;
    if (!p.scheduled) continue;
    t.scheduled += p.end - p.start;
    t.scheduled_w += WeightedSeconds(p.start, p.end, now);
    if (p.up) {
      t.up += p.end - p.start;
      t.up_w += WeightedSeconds(p.start, p.end, now);
    }
  }
  return t;
}

// ------------------------------------------------------------------ the worked example
//
// docs/reliability-score.md, "Worked example": the same history, and every figure the
// document prints, pasted here as literals and checked to half its last printed digit.
// The document and this test change together: a figure changed in one is changed in the
// other in the same commit.

const availability::Schedule& ExampleSchedule() {
  static const availability::Schedule s =
      Weekly("Europe/Rome", {{{"mon", "tue", "wed", "thu", "fri"}, "08:00", "20:00"}});
  return s;
}

Timestamp ExampleNow() { return At("2026-11-26T15:00:00Z"); }
Timestamp ExampleCame() { return At("2026-10-19T09:00:00Z"); }

History ExampleHistory() {
  History h;
  h.now = ExampleNow();
  const Timestamp from = h.now - kWindow;
  h.time.schedule = availability::ScheduledIntervals(ExampleSchedule(), from, h.now);
  h.time.online = {
      {ExampleCame(), At("2026-11-16T13:30:00Z")},
      {At("2026-11-16T14:15:00Z"), At("2026-11-19T07:00:00Z")},  // off for the maintenance
      {At("2026-11-19T10:00:00Z"), At("2026-11-21T22:00:00Z")},  // off Saturday night
      {At("2026-11-21T23:30:00Z"), At("2026-11-24T10:00:00Z")},
      {At("2026-11-24T10:17:00Z"), h.now},
  };
  h.time.maintenance = {
      {"mnt_1", At("2026-11-19T07:00:00Z"), At("2026-11-19T10:00:00Z"), At("2026-11-17T09:00:00Z")},
  };
  h.jobs = {
      {At("2026-11-10T12:00:00Z"), EndParty::kCustomer},
      {At("2026-11-12T08:00:00Z"), EndParty::kPlatform},
      {At("2026-11-20T09:00:00Z"), EndParty::kCustomer},
      {At("2026-11-24T10:00:00Z"), EndParty::kProvider},
  };
  h.gpus = {
      {"gpu-0", {100.0, 102.0, 98.0, 101.0}, 101.0, 2000.0, 0.0},
      {"gpu-1", {80.0, 82.0, 81.0}, 76.95, 1200.0, 120.0},
  };
  h.scheduled_before_window = availability::Overlap(
      availability::ScheduledIntervals(ExampleSchedule(), ExampleCame(), from), ExampleCame(),
      from);
  return h;
}

TEST(ReliabilityWorkedExample, ScheduleAndScheduledTime) {
  const History h = ExampleHistory();
  EXPECT_EQ(h.now - kWindow, At("2026-10-27T15:00:00Z"));
  // 23 weekday stretches in the window, 08:00–20:00 Rome = 07:00–19:00 UTC (CET).
  ASSERT_EQ(h.time.schedule.size(), 23u);
  EXPECT_EQ(h.time.schedule.front(),
            (Interval{At("2026-10-27T15:00:00Z"), At("2026-10-27T19:00:00Z")}));
  EXPECT_EQ(h.time.schedule[1], (Interval{At("2026-10-28T07:00:00Z"), At("2026-10-28T19:00:00Z")}));
  EXPECT_EQ(h.time.schedule.back(),
            (Interval{At("2026-11-26T07:00:00Z"), At("2026-11-26T15:00:00Z")}));
  // Before the window: 77 h (06:00–18:00 UTC until 25 October, CEST; then 07:00–19:00).
  EXPECT_EQ(h.scheduled_before_window, 77 * kOneHour);

  // The table, week by week: scheduled hours and weighted seconds.
  struct Row {
    const char* from;
    const char* to;
    int hours;
    double weighted_s;
  };
  const std::vector<Row> rows = {
      {"2026-10-27T15:00:00Z", "2026-11-02T00:00:00Z", 40, 8805.0},
      {"2026-11-02T00:00:00Z", "2026-11-09T00:00:00Z", 60, 24494.5},
      {"2026-11-09T00:00:00Z", "2026-11-16T00:00:00Z", 60, 48989.1},
      {"2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", 57, 92721.1},
      {"2026-11-23T00:00:00Z", "2026-11-26T15:00:00Z", 44, 134127.4},
  };
  for (const Row& r : rows) {
    const Tally t = TallyOf(h.time, At(r.from), At(r.to), h.now);
    EXPECT_EQ(t.scheduled, r.hours * kOneHour) << r.from;
    EXPECT_NEAR(t.scheduled_w, r.weighted_s, 0.05) << r.from;
  }
  // The planned maintenance: 3 h excused, which would have weighed 5257.1 s.
  EXPECT_TRUE(IsPlanned(h.time.maintenance[0]));
  EXPECT_EQ(Allowances(h.time.maintenance).at("mnt_1"), 3 * kOneHour);
  const Tally all = TallyOf(h.time, h.now - kWindow, h.now, h.now);
  EXPECT_EQ(all.excused, 3 * kOneHour);
  EXPECT_NEAR(WeightedSeconds(At("2026-11-19T07:00:00Z"), At("2026-11-19T10:00:00Z"), h.now),
              5257.1, 0.05);
  EXPECT_EQ(all.scheduled, 261 * kOneHour);
  EXPECT_NEAR(all.scheduled_w, 309137.1, 0.05);
}

TEST(ReliabilityWorkedExample, Outages) {
  const History h = ExampleHistory();
  const Timestamp now = h.now;
  // 16 November 13:30–14:15 UTC: 2700 s, weight at its middle 0.369778, 998.4 weighted s.
  EXPECT_NEAR(Weight(At("2026-11-16T13:52:30Z"), now), 0.369778, 0.0000005);
  EXPECT_NEAR(WeightedSeconds(At("2026-11-16T13:30:00Z"), At("2026-11-16T14:15:00Z"), now), 998.4,
              0.05);
  // 24 November 10:00–10:17 UTC: 1020 s, weight 0.804056, 820.1 weighted s.
  EXPECT_NEAR(Weight(At("2026-11-24T10:08:30Z"), now), 0.804056, 0.0000005);
  EXPECT_NEAR(WeightedSeconds(At("2026-11-24T10:00:00Z"), At("2026-11-24T10:17:00Z"), now), 820.1,
              0.05);
  // Saturday 21 November 22:00–23:30: outside the schedule, nothing.
  const Tally sat = TallyOf(h.time, At("2026-11-21T00:00:00Z"), At("2026-11-23T00:00:00Z"), now);
  EXPECT_EQ(sat.scheduled, Duration{0});
  // Down inside the schedule: 3720 s in all.
  const Tally all = TallyOf(h.time, now - kWindow, now, now);
  EXPECT_EQ(all.scheduled - all.up, Seconds(3720));
}

TEST(ReliabilityWorkedExample, Components) {
  const History h = ExampleHistory();
  const Result r = Compute(h);
  // U
  EXPECT_NEAR(r.scheduled_weighted_s, 309137.1, 0.05);
  EXPECT_NEAR(r.up_weighted_s, 307318.5, 0.05);
  EXPECT_NEAR(r.components.uptime, 0.994117, 0.0000005);
  // C
  EXPECT_NEAR(Weight(At("2026-11-10T12:00:00Z"), h.now), 0.202561, 0.0000005);
  EXPECT_NEAR(Weight(At("2026-11-12T08:00:00Z"), h.now), 0.242883, 0.0000005);
  EXPECT_NEAR(Weight(At("2026-11-20T09:00:00Z"), h.now), 0.538547, 0.0000005);
  EXPECT_NEAR(Weight(At("2026-11-24T10:00:00Z"), h.now), 0.803586, 0.0000005);
  double ok = 0, ended = 0;
  for (const JobEnd& j : h.jobs) {
    if (!JobCounts(j)) continue;
    ended += Weight(j.at, h.now);
    if (JobOk(j)) ok += Weight(j.at, h.now);
  }
  EXPECT_NEAR(ok, 0.741108, 0.0000005);
  EXPECT_NEAR(ended, 1.544693, 0.0000005);
  EXPECT_NEAR(r.components.completion, 0.839017, 0.0000005);
  // B
  EXPECT_NEAR(Baseline(h.gpus[0].passing_scores).value(), 100.0, 0.05);
  EXPECT_NEAR(Baseline(h.gpus[1].passing_scores).value(), 81.0, 0.05);
  EXPECT_NEAR(GpuBenchmark(101.0, 100.0, 2000.0, 0.0), 1.0, 0.00005);
  EXPECT_NEAR(76.95 / 81.0, 0.95, 0.00005);
  EXPECT_NEAR(GpuBenchmark(76.95, 81.0, 1200.0, 120.0), 0.9025, 0.00005);
  EXPECT_NEAR(r.components.benchmark, 0.95125, 0.000005);
  // R
  EXPECT_NEAR(std::pow(r.components.uptime, 0.5), 0.997054, 0.0000005);
  EXPECT_NEAR(std::pow(r.components.completion, 0.3), 0.948705, 0.0000005);
  EXPECT_NEAR(std::pow(r.components.benchmark, 0.2), 0.990054, 0.0000005);
  EXPECT_NEAR(r.score, 93.6503, 0.00005);
  EXPECT_NEAR(r.score, 93.65, 0.005);
  EXPECT_EQ(r.scheduled_total, 338 * kOneHour);
  EXPECT_FALSE(r.is_new);
}

TEST(ReliabilityWorkedExample, FiguresBesideTheScore) {
  const History h = ExampleHistory();
  const Timestamp now = h.now;
  auto ratio = [](const Tally& t) { return SecondsOf(t.up) / SecondsOf(t.scheduled); };
  const Tally day = TallyOf(h.time, now - kOneDay, now, now);
  const Tally week = TallyOf(h.time, now - 7 * kOneDay, now, now);
  const Tally month = TallyOf(h.time, now - kWindow, now, now);
  EXPECT_EQ(day.scheduled, 12 * kOneHour);
  EXPECT_NEAR(ratio(day), 1.0, 0.0000005);
  EXPECT_EQ(week.scheduled, 60 * kOneHour);
  EXPECT_NEAR(ratio(week), 0.995278, 0.0000005);
  EXPECT_NEAR(ratio(month), 0.996041, 0.0000005);

  // The events' impacts: the score minus the score had the event not happened.
  const Result r = Compute(h);
  const Components c = r.components;
  auto without_outage = [&](Timestamp a, Timestamp b) {
    Components better = c;
    better.uptime = (r.up_weighted_s + WeightedSeconds(a, b, now)) / r.scheduled_weighted_s;
    return r.score - Score(better);
  };
  EXPECT_NEAR(without_outage(At("2026-11-24T10:00:00Z"), At("2026-11-24T10:17:00Z")), -0.12, 0.005);
  EXPECT_NEAR(without_outage(At("2026-11-16T13:30:00Z"), At("2026-11-16T14:15:00Z")), -0.15, 0.005);
  Components job_ok = c;
  const double w = Weight(At("2026-11-24T10:00:00Z"), now);
  job_ok.completion = Completion(0.741108 + w, 1.544693);
  EXPECT_NEAR(r.score - Score(job_ok), -3.92, 0.005);
  // gpu-1 at its baseline (0.95 instead of 0.9025), or without throttling (the same).
  Components bench_ok = c;
  bench_ok.benchmark = c.benchmark + (GpuBenchmark(std::nullopt, std::nullopt, 1200.0, 120.0) -
                                      GpuBenchmark(76.95, 81.0, 1200.0, 120.0)) /
                                         2;
  EXPECT_NEAR(bench_ok.benchmark, 0.975, 0.0000005);
  EXPECT_NEAR(r.score - Score(bench_ok), -0.46, 0.005);
  Components cool = c;
  cool.benchmark = c.benchmark +
                   (GpuBenchmark(76.95, 81.0, 0, 0) - GpuBenchmark(76.95, 81.0, 1200.0, 120.0)) / 2;
  EXPECT_NEAR(r.score - Score(cool), -0.46, 0.005);

  // The provider: this machine (2 GPUs) and a 1-GPU machine at 100.
  EXPECT_NEAR(ProviderScore({{r.score, 2}, {100.0, 1}}), 95.7668, 0.00005);
}

TEST(ReliabilityWorkedExample, FiguresOfTheRulesSections) {
  // "The score", "Weights", "C": the figures the document quotes.
  EXPECT_NEAR(std::pow(0.9, 0.5), 0.949, 0.0005);
  EXPECT_NEAR(std::pow(0.9, 0.2), 0.979, 0.0005);
  const Timestamp now = ExampleNow();
  EXPECT_NEAR(Weight(now - 29 * kOneDay, now), 0.0566, 0.00005);
  EXPECT_NEAR(kHalfLifeS / std::numbers::ln2, 872541.96, 0.005);
  EXPECT_NEAR(WeightedSeconds(now - kWindow, now, now), 827805.9, 0.05);
  EXPECT_EQ(Seconds(2592000), kWindow);
  EXPECT_NEAR(WeightedSeconds(now - kOneMinute, now, now), 60.0, 0.05);
  EXPECT_NEAR(WeightedSeconds(now - 7 * kOneDay - kOneMinute, now - 7 * kOneDay, now), 30.0, 0.05);
  EXPECT_NEAR(Score({1, Completion(0, 0), 1}), 98.47, 0.005);
  EXPECT_NEAR(Completion(0, 1), 0.792, 0.0005);
  // The ages of the example's job endings, in days.
  auto age = [&](const char* t) { return SecondsOf(now - At(t)) / 86400; };
  EXPECT_NEAR(age("2026-11-10T12:00:00Z"), 16.125, 0.0005);
  EXPECT_NEAR(age("2026-11-12T08:00:00Z"), 14.292, 0.0005);
  EXPECT_NEAR(age("2026-11-20T09:00:00Z"), 6.25, 0.005);
  EXPECT_NEAR(age("2026-11-24T10:00:00Z"), 2.208, 0.0005);
  // The rounded figures the API shows.
  const Result r = Compute(ExampleHistory());
  EXPECT_NEAR(r.components.uptime, 0.9941, 0.00005);
  EXPECT_NEAR(r.components.completion, 0.8390, 0.00005);
  EXPECT_NEAR(Weight(At("2026-11-24T10:08:30Z"), now), 0.8041, 0.00005);
  EXPECT_NEAR(Weight(At("2026-11-24T10:00:00Z"), now), 0.8036, 0.00005);
  EXPECT_NEAR(Weight(At("2026-11-16T13:52:30Z"), now), 0.3698, 0.00005);
}

// ------------------------------------------------------------------ weights

TEST(ReliabilityWeights, HalveEveryWeek) {
  const Timestamp now = At("2026-06-01T00:00:00Z");
  EXPECT_DOUBLE_EQ(Weight(now, now), 1.0);
  EXPECT_NEAR(Weight(now - 7 * kOneDay, now), 0.5, 1e-12);
  EXPECT_NEAR(Weight(now - 14 * kOneDay, now), 0.25, 1e-12);
  EXPECT_NEAR(Weight(now - 28 * kOneDay, now), 1.0 / 16, 1e-12);
  EXPECT_NEAR(Weight(now - 29 * kOneDay, now), std::exp2(-29.0 / 7), 1e-12);
  EXPECT_DOUBLE_EQ(Weight(now + kOneHour, now), 1.0);  // age below 0 counts as 0
}

TEST(ReliabilityWeights, WeightedSecondsIsTheIntegralOfTheWeight) {
  const Timestamp now = At("2026-06-01T00:00:00Z");
  EXPECT_EQ(WeightedSeconds(now, now, now), 0);
  EXPECT_EQ(WeightedSeconds(now, now - kOneHour, now), 0);
  // The last week: H/ln 2 · (1 − 1/2).
  EXPECT_NEAR(WeightedSeconds(now - 7 * kOneDay, now, now), kHalfLifeS / std::numbers::ln2 * 0.5,
              1e-6);
  // The whole 30 days: H/ln 2 · (1 − 2^(−30/7)).
  EXPECT_NEAR(WeightedSeconds(now - kWindow, now, now),
              kHalfLifeS / std::numbers::ln2 * (1 - std::exp2(-30.0 / 7)), 1e-6);
  // A minute just before now weighs almost its length; a week earlier half of it.
  EXPECT_NEAR(WeightedSeconds(now - kOneMinute, now, now), 60.0, 0.01);
  EXPECT_NEAR(WeightedSeconds(now - 7 * kOneDay - kOneMinute, now - 7 * kOneDay, now), 30.0, 0.01);
  // Additive over adjacent stretches.
  const Timestamp a = now - 20 * kOneDay, b = now - 3 * kOneDay - 17 * kOneMinute;
  EXPECT_NEAR(WeightedSeconds(a, b, now) + WeightedSeconds(b, now, now),
              WeightedSeconds(a, now, now), 1e-6);
}

TEST(ReliabilityWeights, WeightedSecondsOfTimeAfterNowWeighsOne) {
  // The contract (formula.h): ∫ over [a, b) of Weight(t, now) dt, Weight being 1 for an age
  // below 0. A stretch after now then weighs its length.
  const Timestamp now = At("2026-06-01T00:00:00Z");
  EXPECT_NEAR(WeightedSeconds(now, now + kOneHour, now), 3600.0, 1e-6);
  EXPECT_NEAR(WeightedSeconds(now - kOneHour, now + kOneHour, now),
              WeightedSeconds(now - kOneHour, now, now) + 3600.0, 1e-6);
}

TEST(ReliabilityWeights, EpochWeightsTimesTheEpochsWeightAreTheWeightsNow) {
  const Timestamp epoch = At("2026-01-01T00:00:00Z");
  const std::vector<std::pair<Timestamp, Timestamp>> stretches = {
      {At("2026-03-01T10:00:00Z"), At("2026-03-01T10:17:00Z")},
      {At("2026-03-20T00:00:00Z"), At("2026-03-27T00:00:00Z")},
      {At("2026-03-30T23:59:59Z"), At("2026-03-31T00:00:00Z")},
  };
  for (const Timestamp now : {At("2026-03-31T00:00:00Z"), At("2026-04-15T12:34:56Z")}) {
    for (const auto& [a, b] : stretches) {
      const double want = WeightedSeconds(a, b, now);
      EXPECT_NEAR(EpochWeightedSeconds(a, b, epoch) * Weight(epoch, now), want, 1e-9 * want);
    }
    for (const Timestamp t : {epoch, At("2026-02-14T08:00:00Z"), At("2026-03-31T00:00:00Z")}) {
      EXPECT_NEAR(EpochWeight(t, epoch) * Weight(epoch, now), Weight(t, now), 1e-12);
    }
  }
  EXPECT_DOUBLE_EQ(EpochWeight(epoch, epoch), 1.0);
  EXPECT_NEAR(EpochWeight(epoch + 7 * kOneDay, epoch), 2.0, 1e-12);
  EXPECT_EQ(EpochWeightedSeconds(epoch + kOneDay, epoch, epoch), 0);
  // Sums stay valid as time passes: a ratio of epoch-weighted sums is the ratio now.
  const auto& [a0, b0] = stretches[0];
  const auto& [a1, b1] = stretches[1];
  const Timestamp now = At("2026-04-02T00:00:00Z");
  EXPECT_NEAR(EpochWeightedSeconds(a0, b0, epoch) / EpochWeightedSeconds(a1, b1, epoch),
              WeightedSeconds(a0, b0, now) / WeightedSeconds(a1, b1, now), 1e-12);
}

TEST(ReliabilityWeights, AnOutage29DaysAgoWeighsAbout1Over16OfOneNow) {
  const Timestamp now = At("2026-06-01T00:00:00Z");
  auto history_with_outage = [&](Timestamp down_from, Timestamp down_to) {
    History h;
    h.now = now;
    h.time.schedule = availability::ScheduledIntervals(Always(), now - kWindow, now);
    h.time.online = {{now - 40 * kOneDay, down_from}, {down_to, now}};
    return h;
  };
  const Result today = Compute(history_with_outage(now - kOneHour, now));
  const Result old =
      Compute(history_with_outage(now - 29 * kOneDay - kOneHour, now - 29 * kOneDay));
  EXPECT_EQ(today.scheduled_total, kWindow);
  EXPECT_NEAR(today.scheduled_weighted_s, old.scheduled_weighted_s, 1e-6);
  const double ratio = (1 - old.components.uptime) / (1 - today.components.uptime);
  EXPECT_NEAR(ratio, std::exp2(-29.0 / 7), 1e-9);
  EXPECT_NEAR(ratio, 1.0 / 16, 0.01);
  EXPECT_GT(old.score, today.score);
  // An outage older than the window does not count at all.
  const Result gone =
      Compute(history_with_outage(now - 31 * kOneDay - kOneHour, now - 31 * kOneDay));
  EXPECT_DOUBLE_EQ(gone.components.uptime, 1.0);
  EXPECT_DOUBLE_EQ(gone.score, kNoJobsScore);
}

// ------------------------------------------------------------------ time (U)

// A 24/7 machine online for 40 days, with one maintenance window 3 days ago during which
// it was off.
History WithMaintenance(Duration notice, bool online_during = false) {
  History h;
  h.now = At("2026-06-01T00:00:00Z");
  const Timestamp start = h.now - 3 * kOneDay, end = start + 2 * kOneHour;
  h.time.schedule = availability::ScheduledIntervals(Always(), h.now - kWindow, h.now);
  if (online_during) {
    h.time.online = {{h.now - 40 * kOneDay, h.now}};
  } else {
    h.time.online = {{h.now - 40 * kOneDay, start}, {end, h.now}};
  }
  h.time.maintenance = {{"mnt_a", start, end, start - notice}};
  return h;
}

TEST(ReliabilityTime, MaintenanceDeclared25HoursAheadIsExcluded) {
  const History h = WithMaintenance(25 * kOneHour);
  EXPECT_TRUE(IsPlanned(h.time.maintenance[0]));
  EXPECT_EQ(Allowances(h.time.maintenance).at("mnt_a"), 2 * kOneHour);
  const Timestamp start = h.time.maintenance[0].start, end = h.time.maintenance[0].end;
  const std::vector<Piece> pieces = ClassifyTime(h.time, h.now - kWindow, h.now);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[1].start, start);
  EXPECT_EQ(pieces[1].end, end);
  EXPECT_TRUE(pieces[1].excused);
  EXPECT_TRUE(pieces[1].maintenance);
  EXPECT_FALSE(pieces[1].scheduled);
  EXPECT_FALSE(pieces[1].up);
  EXPECT_TRUE(pieces[0].up && pieces[2].up);
  const Result r = Compute(h);
  EXPECT_EQ(r.scheduled_total, kWindow - 2 * kOneHour);
  EXPECT_DOUBLE_EQ(r.components.uptime, 1.0);
  EXPECT_DOUBLE_EQ(r.score, kNoJobsScore);
}

TEST(ReliabilityTime, MaintenanceDeclared23HoursAheadCountsAsDown) {
  const History h = WithMaintenance(23 * kOneHour);
  EXPECT_FALSE(IsPlanned(h.time.maintenance[0]));
  EXPECT_TRUE(Allowances(h.time.maintenance).empty());
  const Timestamp start = h.time.maintenance[0].start, end = h.time.maintenance[0].end;
  const std::vector<Piece> pieces = ClassifyTime(h.time, h.now - kWindow, h.now);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[1].start, start);
  EXPECT_EQ(pieces[1].end, end);
  EXPECT_TRUE(pieces[1].scheduled);
  EXPECT_TRUE(pieces[1].maintenance);
  EXPECT_FALSE(pieces[1].excused);
  EXPECT_FALSE(pieces[1].up);
  const Result r = Compute(h);
  EXPECT_EQ(r.scheduled_total, kWindow);
  const double down = WeightedSeconds(start, end, h.now);
  EXPECT_NEAR(r.scheduled_weighted_s - r.up_weighted_s, down, 1e-6);
  EXPECT_NEAR(r.components.uptime, 1 - down / WeightedSeconds(h.now - kWindow, h.now, h.now),
              1e-12);
  EXPECT_LT(r.score, kNoJobsScore);
  // Late maintenance hides the GPUs: online during it, its time is still down.
  const Result online = Compute(WithMaintenance(23 * kOneHour, /*online_during=*/true));
  EXPECT_NEAR(online.components.uptime, r.components.uptime, 1e-12);
  // Exactly 24 h ahead is planned.
  EXPECT_TRUE(IsPlanned(WithMaintenance(24 * kOneHour).time.maintenance[0]));
  EXPECT_FALSE(IsPlanned(WithMaintenance(24 * kOneHour - kOneSecond).time.maintenance[0]));
}

TEST(ReliabilityTime, PlannedMaintenanceBeyond8HoursIn30DaysCountsAgain) {
  const Timestamp now = At("2026-06-01T00:00:00Z");
  auto window = [&](std::string id, Timestamp start, Duration length) {
    return Maintenance{std::move(id), start, start + length, start - 3 * kOneDay};
  };
  const Timestamp s1 = now - 20 * kOneDay, s2 = now - 12 * kOneDay, s3 = now - 4 * kOneDay;
  History h;
  h.now = now;
  h.time.schedule = availability::ScheduledIntervals(Always(), now - kWindow, now);
  h.time.online = {{now - 40 * kOneDay, now}};  // online, but maintenance hides it
  h.time.maintenance = {window("m1", s1, 3 * kOneHour), window("m2", s2, 3 * kOneHour),
                        window("m3", s3, 3 * kOneHour)};
  const std::map<std::string, Duration> allowance = Allowances(h.time.maintenance);
  EXPECT_EQ(allowance.at("m1"), 3 * kOneHour);
  EXPECT_EQ(allowance.at("m2"), 3 * kOneHour);
  EXPECT_EQ(allowance.at("m3"), 2 * kOneHour);  // 8 − 3 − 3
  // m3: its first 2 h excused, its last hour down.
  const std::vector<Piece> p = ClassifyTime(h.time, s3, s3 + 3 * kOneHour);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].end, s3 + 2 * kOneHour);
  EXPECT_TRUE(p[0].excused);
  EXPECT_FALSE(p[0].scheduled);
  EXPECT_TRUE(p[1].scheduled && p[1].maintenance && !p[1].up && !p[1].excused);
  const Result r = Compute(h);
  EXPECT_EQ(r.scheduled_total, kWindow - 8 * kOneHour);
  EXPECT_NEAR(r.scheduled_weighted_s - r.up_weighted_s,
              WeightedSeconds(s3 + 2 * kOneHour, s3 + 3 * kOneHour, now), 1e-6);

  // A fourth window sees no allowance left; one more than 30 days after m1 sees m1's 3 h
  // back (only m2 and m3 started in the 30 days before it).
  std::vector<Maintenance> more = h.time.maintenance;
  more.push_back(window("m4", s3 + kOneDay, kOneHour));
  more.push_back(window("m5", s1 + kWindow + kOneHour, 4 * kOneHour));
  const std::map<std::string, Duration> a2 = Allowances(more);
  EXPECT_EQ(a2.at("m4"), Duration{0});
  EXPECT_EQ(a2.at("m5"), 3 * kOneHour);  // 8 − m2 3 − m3 2 − m4 0
  // A window that started exactly 30 days before is no longer in the period.
  const std::map<std::string, Duration> a3 =
      Allowances({window("x1", s1, 8 * kOneHour), window("x2", s1 + kWindow, 5 * kOneHour)});
  EXPECT_EQ(a3.at("x2"), 5 * kOneHour);
  // Windows declared late do not use the allowance.
  const std::map<std::string, Duration> a4 = Allowances(
      {Maintenance{"late", s1, s1 + 6 * kOneHour, s1 - kOneHour}, window("p", s2, 8 * kOneHour)});
  EXPECT_EQ(a4.count("late"), 0u);
  EXPECT_EQ(a4.at("p"), 8 * kOneHour);
}

TEST(ReliabilityTime, AllowanceIsTheWindowsLengthButExcusesOnlyScheduledTime) {
  // Weekdays 08:00–20:00 Rome; a planned window 07:00–11:00 Rome (06:00–10:00 UTC) on
  // Monday 18 May 2026 (CEST): 4 h of allowance used, of which 3 h fall in the schedule.
  const availability::Schedule s =
      Weekly("Europe/Rome", {{{"mon", "tue", "wed", "thu", "fri"}, "08:00", "20:00"}});
  const Timestamp now = At("2026-05-20T12:00:00Z");
  History h;
  h.now = now;
  h.time.schedule = availability::ScheduledIntervals(s, now - kWindow, now);
  h.time.online = {{now - 40 * kOneDay, now}};
  const Timestamp start = At("2026-05-18T05:00:00Z");
  h.time.maintenance = {{"m", start, start + 4 * kOneHour, start - 2 * kOneDay}};
  EXPECT_EQ(Allowances(h.time.maintenance).at("m"), 4 * kOneHour);
  const Tally t = TallyOf(h.time, start, start + 4 * kOneHour, now);
  EXPECT_EQ(t.excused, 3 * kOneHour);  // 08:00–11:00 Rome = 06:00–09:00 UTC
  // The next planned window in the 30 days has 8 − 4 = 4 h left, not 5.
  std::vector<Maintenance> two = h.time.maintenance;
  two.push_back({"n", start + kOneDay, start + kOneDay + 6 * kOneHour, start - kOneDay});
  EXPECT_EQ(Allowances(two).at("n"), 4 * kOneHour);
  EXPECT_EQ(t.scheduled, Duration{0});
}

TEST(ReliabilityTime, ScheduleCrossingMidnightOverTheFallBackNight) {
  // Saturdays 22:00 → Sunday 06:00 in Rome. On 24/25 October 2026 the clocks go back at
  // 03:00: that night is 9 h (20:00 UTC → 05:00 UTC); the four before it 8 h each.
  const availability::Schedule s = Weekly("Europe/Rome", {{{"sat"}, "22:00", "06:00"}});
  const Timestamp now = At("2026-10-26T00:00:00Z");
  History h;
  h.now = now;
  h.time.schedule = availability::ScheduledIntervals(s, now - kWindow, now);
  ASSERT_EQ(h.time.schedule.size(), 5u);
  EXPECT_EQ(h.time.schedule.back(),
            (Interval{At("2026-10-24T20:00:00Z"), At("2026-10-25T05:00:00Z")}));
  // Offline 01:30–02:30 UTC: 02:30–03:30 local after the clocks went back (the second 02:30).
  const Timestamp down = At("2026-10-25T01:30:00Z");
  h.time.online = {{now - 40 * kOneDay, down}, {down + kOneHour, now}};
  const Result r = Compute(h);
  EXPECT_EQ(r.scheduled_total, 41 * kOneHour);
  EXPECT_NEAR(r.scheduled_weighted_s - r.up_weighted_s, WeightedSeconds(down, down + kOneHour, now),
              1e-6);
  // The same hour offline outside the schedule (Sunday 12:00 UTC) costs nothing.
  h.time.online = {{now - 40 * kOneDay, At("2026-10-25T12:00:00Z")},
                   {At("2026-10-25T13:00:00Z"), now}};
  EXPECT_DOUBLE_EQ(Compute(h).components.uptime, 1.0);
}

TEST(ReliabilityTime, NoScheduledTimeYetIsUptimeOneAndNew) {
  History h;
  h.now = At("2026-06-01T00:00:00Z");
  const Result r = Compute(h);
  EXPECT_DOUBLE_EQ(r.components.uptime, 1.0);
  EXPECT_TRUE(r.is_new);
  EXPECT_DOUBLE_EQ(r.score, 100 * std::pow(0.95, 0.3));
}

TEST(ReliabilityTime, NewUntil24ScheduledHours) {
  History h;
  h.now = At("2026-06-01T00:00:00Z");
  h.time.online = {{h.now - 40 * kOneDay, h.now}};
  h.time.schedule = {{h.now - 23 * kOneHour, h.now}};  // the machine came 23 h ago
  EXPECT_TRUE(Compute(h).is_new);
  h.scheduled_before_window = kOneHour - kOneSecond;
  EXPECT_TRUE(Compute(h).is_new);
  h.scheduled_before_window = kOneHour;
  EXPECT_FALSE(Compute(h).is_new);
  h.scheduled_before_window = Duration{0};
  h.time.schedule = {{h.now - 24 * kOneHour, h.now}};
  EXPECT_FALSE(Compute(h).is_new);
  // Excused maintenance is not scheduled time.
  h.time.maintenance = {{"m", h.now - 2 * kOneHour, h.now - kOneHour, h.now - 3 * kOneDay}};
  const Result r = Compute(h);
  EXPECT_TRUE(r.is_new);
  EXPECT_EQ(r.scheduled_total, 23 * kOneHour);
}

TEST(ReliabilityTime, RecoveryAfterABadWeek) {
  // 24/7, offline 18 h a day during the week [t0, t0 + 7 d), online ever since.
  const Timestamp t0 = At("2026-03-02T00:00:00Z");
  std::vector<Interval> online = {{t0 - 60 * kOneDay, t0}};
  for (int d = 0; d < 7; ++d) {
    online.push_back({t0 + d * kOneDay + 18 * kOneHour, t0 + (d + 1) * kOneDay});
  }
  online.back().end = t0 + 200 * kOneDay;
  auto at = [&](Timestamp now) {
    History h;
    h.now = now;
    h.time.schedule = availability::ScheduledIntervals(Always(), now - kWindow, now);
    h.time.online = online;
    return Compute(h);
  };
  double last = 0;
  for (int days = 7; days <= 37; ++days) {
    const Result r = at(t0 + days * kOneDay);
    EXPECT_GT(r.score, last) << days << " days after the bad week began";
    last = r.score;
  }
  // While the bad week is wholly inside the window its weighted down time halves every
  // week, against the same weighted scheduled time.
  const Result w1 = at(t0 + 7 * kOneDay), w2 = at(t0 + 14 * kOneDay), w3 = at(t0 + 21 * kOneDay);
  EXPECT_NEAR((1 - w2.components.uptime) / (1 - w1.components.uptime), 0.5, 1e-9);
  EXPECT_NEAR((1 - w3.components.uptime) / (1 - w2.components.uptime), 0.5, 1e-9);
  EXPECT_LT(w1.score, 80.0);
  EXPECT_GT(w3.score, 90.0);
  // Once it has left the window uptime is back to 1.
  EXPECT_DOUBLE_EQ(at(t0 + 37 * kOneDay).components.uptime, 1.0);
  EXPECT_DOUBLE_EQ(at(t0 + 37 * kOneDay).score, kNoJobsScore);
}

// ------------------------------------------------------------------ jobs (C)

TEST(ReliabilityJobs, ProviderCountsAgainstPlatformIsLeftOutCustomerIsOk) {
  const JobEnd customer{At("2026-06-01T00:00:00Z"), EndParty::kCustomer};
  const JobEnd provider{customer.at, EndParty::kProvider};
  const JobEnd platform{customer.at, EndParty::kPlatform};
  EXPECT_TRUE(JobCounts(customer) && JobOk(customer));
  EXPECT_TRUE(JobCounts(provider) && !JobOk(provider));
  EXPECT_FALSE(JobCounts(platform));
  EXPECT_FALSE(JobOk(platform));

  History h;
  h.now = customer.at;
  auto completion = [&](std::vector<JobEnd> jobs) {
    h.jobs = std::move(jobs);
    return Compute(h).components.completion;
  };
  EXPECT_DOUBLE_EQ(completion({}), 0.95);  // the prior alone
  EXPECT_DOUBLE_EQ(completion({platform, platform}), 0.95);
  EXPECT_DOUBLE_EQ(completion({customer}), 5.75 / 6);
  EXPECT_DOUBLE_EQ(completion({provider}), 4.75 / 6);
  EXPECT_DOUBLE_EQ(completion({customer, provider, platform}), 5.75 / 7);
  // A provider-fault ending a week ago weighs half.
  const JobEnd old_provider{h.now - 7 * kOneDay, EndParty::kProvider};
  EXPECT_NEAR(completion({old_provider}), 4.75 / 5.5, 1e-12);
  // Older than the window, or after now: not counted.
  EXPECT_DOUBLE_EQ(completion({{h.now - kWindow - kOneSecond, EndParty::kProvider}}), 0.95);
  EXPECT_DOUBLE_EQ(completion({{h.now + kOneSecond, EndParty::kProvider}}), 0.95);
  EXPECT_DOUBLE_EQ(Completion(0, 0), 0.95);
  EXPECT_DOUBLE_EQ(Completion(10, 10), 14.75 / 15);
}

// ------------------------------------------------------------------ benchmarks (B)

TEST(ReliabilityBenchmark, BaselineIsTheMedianOfTheFirstThreePassingRuns) {
  EXPECT_FALSE(Baseline({}).has_value());
  EXPECT_DOUBLE_EQ(Baseline({90}).value(), 90);
  EXPECT_DOUBLE_EQ(Baseline({90, 100}).value(), 95);
  EXPECT_DOUBLE_EQ(Baseline({104, 96, 100}).value(), 100);
  EXPECT_DOUBLE_EQ(Baseline({104, 96, 100, 10, 10}).value(), 100);  // later runs ignored
}

TEST(ReliabilityBenchmark, DegradedRebenchmark) {
  const std::optional<double> baseline = Baseline({100, 104, 96});
  EXPECT_DOUBLE_EQ(GpuBenchmark(100, baseline, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(GpuBenchmark(90, baseline, 0, 0), 0.9);
  EXPECT_DOUBLE_EQ(GpuBenchmark(110, baseline, 0, 0), 1.0);  // above the baseline: capped
  EXPECT_DOUBLE_EQ(GpuBenchmark(0, baseline, 0, 0), 0.0);
  // Without a passing run or a latest score the ratio counts 1.
  EXPECT_DOUBLE_EQ(GpuBenchmark(50, std::nullopt, 0, 0), 1.0);
  EXPECT_DOUBLE_EQ(GpuBenchmark(std::nullopt, baseline, 0, 0), 1.0);

  History h;
  h.now = At("2026-06-01T00:00:00Z");
  h.gpus = {{"g0", {100, 104, 96}, 90.0, 0, 0}, {"g1", {100, 104, 96}, 101.0, 0, 0}};
  const Result r = Compute(h);
  EXPECT_DOUBLE_EQ(r.components.benchmark, 0.95);
  EXPECT_NEAR(r.score, 100 * std::pow(0.95, 0.3) * std::pow(0.95, 0.2), 1e-9);
}

TEST(ReliabilityBenchmark, ThrottledGpu) {
  EXPECT_DOUBLE_EQ(GpuBenchmark(std::nullopt, std::nullopt, 100, 30), 0.85);
  EXPECT_DOUBLE_EQ(GpuBenchmark(std::nullopt, std::nullopt, 100, 100), 0.5);
  EXPECT_DOUBLE_EQ(GpuBenchmark(std::nullopt, std::nullopt, 0, 0), 1.0);  // never loaded
  EXPECT_DOUBLE_EQ(GpuBenchmark(90, 100.0, 100, 20), 0.9 * 0.9);
  History h;
  h.now = At("2026-06-01T00:00:00Z");
  h.gpus = {{"cool", {}, std::nullopt, 500, 0}, {"hot", {}, std::nullopt, 500, 100}};
  EXPECT_DOUBLE_EQ(Compute(h).components.benchmark, 0.95);
  h.gpus.clear();  // no GPUs: 1
  EXPECT_DOUBLE_EQ(Compute(h).components.benchmark, 1.0);
}

// ------------------------------------------------------------------ the score

TEST(ReliabilityScore, ExponentsAndBounds) {
  EXPECT_DOUBLE_EQ(Score({1, 1, 1}), 100.0);
  EXPECT_NEAR(Score({0.81, 1, 1}), 90.0, 1e-9);
  EXPECT_NEAR(Score({1, 0.5, 1}), 100 * std::pow(0.5, 0.3), 1e-9);
  EXPECT_NEAR(Score({1, 1, 0.5}), 100 * std::pow(0.5, 0.2), 1e-9);
  EXPECT_DOUBLE_EQ(Score({0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(Score({1.5, 2, 1}), 100.0);  // parts clamped to [0, 1]
}

TEST(ReliabilityScore, ProviderScoreIsTheGpuWeightedMean) {
  EXPECT_DOUBLE_EQ(ProviderScore({}), 100.0);
  EXPECT_DOUBLE_EQ(ProviderScore({{90, 2}, {60, 1}}), 80.0);
  EXPECT_DOUBLE_EQ(ProviderScore({{90, 8}, {50, 2}}), 82.0);
  EXPECT_DOUBLE_EQ(ProviderScore({{90, 0}, {60, 0}}), 75.0);  // machines without GPUs weigh 1
  EXPECT_DOUBLE_EQ(ProviderScore({{90, 0}, {60, 1}}), 75.0);
  EXPECT_DOUBLE_EQ(ProviderScore({{70, 4}}), 70.0);
}

}  // namespace
}  // namespace gpunex::platform::reliability
