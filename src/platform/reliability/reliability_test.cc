// The incremental reliability score with a real Fleet and Availability on both backends:
// its figures equal formula.h's reference computation over the same stored history; each
// input (online time, schedules and maintenance, workload endings, benchmark scores,
// telemetry under load) moves the score as the formula says; hours leave the windows; a
// failed or uncertain commit and a restart neither lose nor double anything; providers are
// told when a score crosses the threshold; who may read what. FakeClock; RefreshOnce
// called directly.
#include "platform/reliability/reliability.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "common/testing/enum_names.h"
#include "platform/fleet/test_util.h"

namespace gpunex::platform::reliability {
namespace {

using fleet::testing::FakeAgent;
using ::testing::HasSubstr;

Timestamp At(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }

class ReliabilityTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(At("2026-12-01T00:00:00Z"));
    availability::AvailabilityOptions ao;
    ao.clock = &clock_;
    availability_ = std::make_unique<availability::Availability>(faults(), fleet(), ao);
    MakeReliability();
  }
  void TearDown() override {
    reliability_.reset();
    availability_.reset();
    FleetTestBase::TearDown();
  }
  // A (new) Reliability on the same Availability: a restart of the score's upkeep. The
  // old one's schedule hook stays registered, so a test that does this changes no
  // schedule afterwards.
  void MakeReliability() {
    reliability_.reset();
    ReliabilityOptions o;
    o.clock = &clock_;
    o.catch_up_days = catch_up_days_;
    reliability_ = std::make_unique<Reliability>(faults(), *availability_, o);
  }
  Reliability& reliability() { return *reliability_; }

  void Refresh() {
    Status st = reliability().RefreshOnce();
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  ReliabilityView View(const std::string& machine_id, PageRequest page = {}) {
    auto v = reliability().ForMachine(As(pia_), machine_id, page);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : ReliabilityView();
  }
  // Keeps the machine online through `d` (a heartbeat at the end).
  void Online(FakeAgent& a, Duration d) {
    clock_.Advance(d);
    a.Heartbeat();
  }
  // The agent falls silent now: Offline after offline_after_s, back after `d` in all. The
  // agents in `alive` keep heartbeating.
  void Outage(FakeAgent& a, Duration d, const std::vector<FakeAgent*>& alive = {}) {
    const Timestamp start = clock_.Now();
    clock_.Advance(Seconds(fleet().options().offline_after_s) + kOneSecond);
    for (FakeAgent* other : alive) other->Heartbeat();
    ASSERT_TRUE(fleet().SweepOnce().ok());
    clock_.Set(start + d);
    a.Heartbeat();
  }
  // formula.h's Compute over what the store holds for the machine, with the window cut
  // at the last whole hour (as the incremental score moves it).
  Result Reference(const std::string& machine_id, const std::vector<JobEnd>& jobs = {},
                   const std::vector<GpuFacts>& gpus = {}) {
    History h;
    h.now = clock_.Now();
    Timestamp created =
        FromUnixMicros(Number("SELECT created_at FROM machines WHERE id = ?", {machine_id}));
    for (const auto& row : Texts("SELECT started_at || ',' || COALESCE(ended_at, -1) FROM "
                                 "machine_intervals WHERE machine_id = ? AND state = 'online' "
                                 "ORDER BY started_at",
                                 {machine_id})) {
      const int64_t a = std::stoll(row.substr(0, row.find(',')));
      const int64_t b = std::stoll(row.substr(row.find(',') + 1));
      h.time.online.push_back({FromUnixMicros(a), b < 0 ? h.now : FromUnixMicros(b)});
    }
    h.time.schedule = {{created, h.now}};
    h.jobs = jobs;
    h.gpus = gpus;
    return Compute(h);
  }

  int64_t catch_up_days_ = 2000;
  std::unique_ptr<availability::Availability> availability_;
  std::unique_ptr<Reliability> reliability_;
};

// Machine-days per catch-up transaction: 15.
class ReliabilityCatchUpTest : public ReliabilityTest {
 protected:
  ReliabilityCatchUpTest() { catch_up_days_ = 15; }
};

TEST_P(ReliabilityTest, UptimeIsWeightedOnlineTimeOverScheduledTime) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, 10 * kOneHour);
  Outage(a, 2 * kOneHour);
  Online(a, 12 * kOneHour);
  Refresh();
  const ReliabilityView v = View(a.machine_id);
  const Result ref = Reference(a.machine_id);
  EXPECT_NEAR(v.components.uptime, ref.components.uptime, 1e-4);
  // 2 h down of 24 h, the older hours weighing a little less than the recent ones.
  const Timestamp t0 = At("2026-12-01T00:00:00Z"), now = clock_.Now();
  const double up = WeightedSeconds(t0, t0 + 10 * kOneHour + Seconds(31), now) +
                    WeightedSeconds(t0 + 12 * kOneHour, now, now);
  EXPECT_NEAR(v.components.uptime, up / WeightedSeconds(t0, now, now), 1e-4);
  EXPECT_NEAR(*v.uptime_24h, (22 * 3600.0 + 31) / (24 * 3600.0), 1e-4) << "unweighted";
  EXPECT_FALSE(v.is_new);
  EXPECT_DOUBLE_EQ(v.scheduled_hours, 24);
  EXPECT_NEAR(v.score, 100 * std::sqrt(v.components.uptime) * std::pow(0.95, 0.3), 0.01);
  // The outage is an event, with its length and what it cost.
  ASSERT_EQ(v.events.items.size(), 1u);
  EXPECT_EQ(v.events.items[0].kind, ReliabilityEventKind::kOutage);
  EXPECT_EQ(v.events.items[0].duration_s, 2 * 3600 - 31);
  EXPECT_LT(v.events.items[0].impact, -1);
  EXPECT_THAT(v.events.items[0].description, HasSubstr("Offline 2026-12-01 10:00"));
  EXPECT_EQ(v.outages, 1);
}

TEST_P(ReliabilityTest, RefreshingOftenOrOnceGivesTheSameScore) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  FakeAgent& b = NewAgent(pia_);
  ASSERT_TRUE(b.Join());
  for (int i = 0; i < 30; ++i) {
    Online(a, 47 * kOneMinute);
    b.Heartbeat();
    Refresh();  // a: refreshed every 47 minutes
    if (i % 7 == 3) Outage(a, 13 * kOneMinute, {&b});
  }
  const Result ref = Reference(a.machine_id);
  EXPECT_NEAR(View(a.machine_id).components.uptime, ref.components.uptime, 1e-4);
  EXPECT_NEAR(View(a.machine_id).score, ref.score, 0.01);
  EXPECT_DOUBLE_EQ(View(b.machine_id).components.uptime, 1);
}

TEST_P(ReliabilityTest, AnOutageLeavesTheWindowAfterThirtyDays) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, kOneDay);
  Outage(a, 6 * kOneHour);
  Refresh();
  const double fresh = View(a.machine_id).components.uptime;
  EXPECT_LT(fresh, 0.8);
  for (int day = 0; day < 29; ++day) {
    Online(a, kOneDay);
    Refresh();
  }
  const ReliabilityView aged = View(a.machine_id);
  EXPECT_GT(aged.components.uptime, fresh) << "older outages weigh less";
  EXPECT_LT(aged.components.uptime, 1);
  EXPECT_DOUBLE_EQ(*aged.uptime_7d, 1);
  EXPECT_DOUBLE_EQ(*aged.uptime_24h, 1);
  Online(a, 2 * kOneDay);
  Refresh();
  EXPECT_DOUBLE_EQ(View(a.machine_id).components.uptime, 1) << "gone from the window";
  EXPECT_DOUBLE_EQ(*View(a.machine_id).uptime_30d, 1);
  EXPECT_TRUE(View(a.machine_id).events.items.empty());
}

TEST_P(ReliabilityTest, JobsEndedByTheProviderCountAgainstAndThePlatformsAreLeftOut) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, 2 * kOneHour);
  auto end_job = [&](const std::string& id, const std::string& party, Timestamp at) {
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                      return tx
                          .Exec(
                              "INSERT INTO workloads (id, machine_id, provider_id, created_by, "
                              "purpose, spec, gpu_ids, state, end_party, end_reason, created_at, "
                              "ended_at, updated_at) VALUES (?, ?, ?, ?, 'custom', '{}', '[]', "
                              "'exited', ?, 'container exited', ?, ?, ?)",
                              {id, a.machine_id, pia_, customer_, party, ToUnixMicros(at),
                               ToUnixMicros(at), ToUnixMicros(at)})
                          .status();
                    })
                    .ok());
  };
  const Timestamp t1 = clock_.Now() - kOneHour, t2 = clock_.Now() - 30 * kOneMinute;
  end_job("wl_1", "customer", t1);
  end_job("wl_2", "provider", t2);
  end_job("wl_3", "platform", t2);
  Refresh();
  const double w1 = Weight(t1, clock_.Now()), w2 = Weight(t2, clock_.Now());
  EXPECT_NEAR(View(a.machine_id).components.completion, (w1 + 4.75) / (w1 + w2 + 5), 1e-4);
  Refresh();  // counted once
  EXPECT_NEAR(View(a.machine_id).components.completion, (w1 + 4.75) / (w1 + w2 + 5), 1e-4);
  // An ending committed late (with an earlier time) is still counted, once.
  end_job("wl_4", "customer", clock_.Now() - kOneMinute);
  Refresh();
  const double w4 = Weight(clock_.Now() - kOneMinute, clock_.Now());
  EXPECT_NEAR(View(a.machine_id).components.completion, (w1 + w4 + 4.75) / (w1 + w2 + w4 + 5),
              1e-4);
  const auto events = View(a.machine_id).events.items;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReliabilityEventKind::kJobEnded);
  EXPECT_THAT(events[0].description, HasSubstr("wl_2"));
}

// Issue 24: an ending counts by the party its cause is put down to (fleet/endings.h), as
// the fleet records it from the agent's report: a container the kernel killed at its own
// memory limit is the customer's (it counts as ok, no provider-side event), one removed on
// the host the provider's (it counts against).
TEST_P(ReliabilityTest, AnOutOfMemoryEndingIsTheCustomersAndARemovedContainerTheProviders) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, 2 * kOneHour);
  Refresh();
  const double before = View(a.machine_id).score;
  auto running = [&](const std::string& id) {
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                      return tx
                          .Exec(
                              "INSERT INTO workloads (id, machine_id, provider_id, created_by, "
                              "purpose, spec, gpu_ids, state, created_at, started_at, "
                              "updated_at) VALUES (?, ?, ?, ?, 'rental', '{}', '[]', "
                              "'running', ?, ?, ?)",
                              {id, a.machine_id, pia_, customer_, ToUnixMicros(clock_.Now()),
                               ToUnixMicros(clock_.Now()), ToUnixMicros(clock_.Now())})
                          .status();
                    })
                    .ok());
  };
  running("wl_oom");
  Online(a, kOneMinute);
  const Timestamp t1 = clock_.Now();
  a.Event("wl_oom", "failed", 137, "out of memory", "", protocol::kCauseOomKilled);
  EXPECT_EQ(Text("SELECT end_party FROM workloads WHERE id = 'wl_oom'"), "customer");
  Online(a, kOneMinute);
  Refresh();
  const double w1 = Weight(t1, clock_.Now());
  EXPECT_NEAR(View(a.machine_id).components.completion, (w1 + 4.75) / (w1 + 5), 1e-4);
  EXPECT_TRUE(View(a.machine_id).events.items.empty()) << "no provider-side ending";
  EXPECT_GE(View(a.machine_id).score, before) << "the customer's ending lowers nothing";

  running("wl_gone");
  Online(a, kOneMinute);
  const Timestamp t2 = clock_.Now();
  a.Event("wl_gone", "failed", 137, "the container was removed outside the agent", "",
          protocol::kCauseContainerGone);
  EXPECT_EQ(Text("SELECT end_party FROM workloads WHERE id = 'wl_gone'"), "provider");
  Online(a, kOneMinute);
  Refresh();
  const double v1 = Weight(t1, clock_.Now()), v2 = Weight(t2, clock_.Now());
  EXPECT_NEAR(View(a.machine_id).components.completion, (v1 + 4.75) / (v1 + v2 + 5), 1e-4);
  const auto events = View(a.machine_id).events.items;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ReliabilityEventKind::kJobEnded);
  EXPECT_THAT(events[0].description, HasSubstr("wl_gone"));
  EXPECT_LT(View(a.machine_id).score, before);
}

TEST_P(ReliabilityTest, ADegradedRebenchmarkAndThrottlingLowerTheBenchmarkPart) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  const std::vector<std::string> gpus = GpuIds(a.machine_id);
  auto run = [&](const std::string& id, double score, bool passed) {
    clock_.Advance(kOneHour);
    const int64_t now = ToUnixMicros(clock_.Now());
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                      GPUNEX_RETURN_IF_ERROR(
                          tx.Exec("INSERT INTO benchmark_runs (id, machine_id, reason, state, "
                                  "command_id, machine_phases, emulated, failures, created_at, "
                                  "finished_at) VALUES (?, ?, 'periodic', ?, 'cmd', 0, 1, '[]', "
                                  "?, ?)",
                                  {id, a.machine_id, passed ? "passed" : "failed", now, now})
                              .status());
                      GPUNEX_RETURN_IF_ERROR(
                          tx.Exec("INSERT INTO benchmark_gpus (run_id, gpu_id, uuid, catalog_id, "
                                  "state, score, failures, created_at) VALUES (?, ?, 'u', "
                                  "'h100-sxm-80gb', ?, ?, '[]', ?)",
                                  {id, gpus[0], passed ? "passed" : "failed", score, now})
                              .status());
                      return tx
                          .Exec(
                              "INSERT INTO gpu_benchmark_status (gpu_id, machine_id, "
                              "performance_score, last_benchmark_at) VALUES (?, ?, ?, ?) ON "
                              "CONFLICT (gpu_id) DO UPDATE SET performance_score = "
                              "excluded.performance_score, last_benchmark_at = "
                              "excluded.last_benchmark_at",
                              {gpus[0], a.machine_id, score, now})
                          .status();
                    })
                    .ok());
    a.Heartbeat();
    Refresh();
  };
  run("bnr_1", 200, true);
  run("bnr_2", 210, true);
  EXPECT_DOUBLE_EQ(View(a.machine_id).components.benchmark, 1) << "latest above the baseline";
  run("bnr_3", 190, true);  // baseline: median(200, 210, 190) = 200
  run("bnr_4", 180, false);
  // GPU 0 at 180 / 200; GPU 1 has no runs: (0.9 + 1) / 2.
  EXPECT_NEAR(View(a.machine_id).components.benchmark, 0.95, 1e-9);
  run("bnr_5", 230, true);
  EXPECT_NEAR(View(a.machine_id).components.benchmark, 1, 1e-9) << "capped at the baseline";

  // GPU 1 throttles in a quarter of its loaded samples; idle samples do not count.
  for (int i = 0; i < 8; ++i) {
    clock_.Advance(Seconds(10));
    protocol::Heartbeat h;
    h.seq = ++a.seq;
    for (size_t g = 0; g < a.gpus.size(); ++g) {
      protocol::GpuSample s;
      s.uuid = a.gpus[g].uuid;
      s.utilization_pct = i < 4 ? 95 : 3;
      if (g == 1 && (i == 0 || i >= 4)) s.throttle_reasons = {"hw_thermal_slowdown"};
      h.gpus.push_back(s);
    }
    a.Send(h);
  }
  clock_.Advance(2 * kOneMinute);
  a.Heartbeat();
  Refresh();
  EXPECT_NEAR(View(a.machine_id).components.benchmark, (1 + (1 - 0.5 * 0.25)) / 2, 1e-6);
  bool throttling = false;
  for (const auto& e : View(a.machine_id).events.items)
    throttling |= e.kind == ReliabilityEventKind::kThrottling;
  EXPECT_TRUE(throttling);
}

TEST_P(ReliabilityTest, PlannedMaintenanceIsExcusedAndShortNoticeIsNot) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  FakeAgent& b = NewAgent(pia_);
  ASSERT_TRUE(b.Join());
  const Timestamp start = clock_.Now() + 25 * kOneHour;
  auto planned = availability_->Declare(As(pia_), a.machine_id,
                                        {start, start + 2 * kOneHour, "disk", "new disks here"});
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  Online(a, 2 * kOneHour);
  b.Heartbeat();
  ASSERT_TRUE(availability_
                  ->Declare(As(pia_), b.machine_id,
                            {start, start + 2 * kOneHour, "disk", "new disks, short notice"})
                  .ok());
  for (int h = 0; h < 29; ++h) {
    Online(a, kOneHour);
    b.Heartbeat();
  }
  Refresh();
  // Both online throughout; a's window (25 h ahead) is planned and not scheduled time, b's
  // (23 h ahead) counts, as down.
  EXPECT_DOUBLE_EQ(View(a.machine_id).components.uptime, 1);
  EXPECT_DOUBLE_EQ(View(a.machine_id).scheduled_hours, 29);
  EXPECT_LT(View(b.machine_id).components.uptime, 0.95);
  EXPECT_DOUBLE_EQ(View(b.machine_id).scheduled_hours, 31);
  EXPECT_EQ(View(b.machine_id).outages, 1);
}

TEST_P(ReliabilityTest, AScheduleChangeAccountsTheTimeBeforeItUnderTheOldSchedule) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  FakeAgent& other = NewAgent(pia_);
  ASSERT_TRUE(other.Join());
  Refresh();  // both accounted: the change below accounts only its own machine
  Online(a, 10 * kOneHour);
  // Only Sundays from now on (today is a Tuesday).
  availability::Schedule sundays;
  sundays.always = false;
  sundays.timezone = "UTC";
  sundays.windows = {{{"sun"}, "00:00", "24:00"}};
  auto set = availability_->SetSchedule(As(pia_), a.machine_id, sundays);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_LT(Number("SELECT accrued_until FROM reliability_machines WHERE machine_id = ?",
                   {other.machine_id}),
            ToUnixMicros(clock_.Now()))
      << "the other machine waits for the refresher";
  Online(a, 20 * kOneHour);
  Refresh();
  EXPECT_DOUBLE_EQ(View(a.machine_id).scheduled_hours, 10);
  Outage(a, 5 * kOneHour);  // outside the schedule: no harm
  Refresh();
  EXPECT_DOUBLE_EQ(View(a.machine_id).components.uptime, 1);
  EXPECT_TRUE(View(a.machine_id).events.items.empty());
}

TEST_P(ReliabilityTest, AFailedOrUncertainCommitNeitherLosesNorDoublesTime) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, 3 * kOneHour);
  Outage(a, kOneHour);
  faults().FailCommit("UPDATE reliability_machines", /*committed=*/false);
  EXPECT_FALSE(reliability().RefreshOnce().ok());
  Online(a, 2 * kOneHour);
  faults().FailCommit("UPDATE reliability_machines", /*committed=*/true);
  EXPECT_FALSE(reliability().RefreshOnce().ok());
  Online(a, 2 * kOneHour);
  faults().FailStatement("INSERT INTO reliability_hours", Unavailable("gone"));
  EXPECT_FALSE(reliability().RefreshOnce().ok());
  Refresh();
  EXPECT_DOUBLE_EQ(View(a.machine_id).scheduled_hours, 8);
  EXPECT_NEAR(View(a.machine_id).components.uptime, Reference(a.machine_id).components.uptime,
              1e-4);
  // A restart (a new instance on the same database) carries on where the last one left.
  MakeReliability();
  Online(a, 4 * kOneHour);
  Refresh();
  EXPECT_DOUBLE_EQ(View(a.machine_id).scheduled_hours, 12);
  EXPECT_NEAR(View(a.machine_id).components.uptime, Reference(a.machine_id).components.uptime,
              1e-4);
}

TEST_P(ReliabilityCatchUpTest, MachinesFarBehindAreCaughtUpInSeveralTransactions) {
  std::vector<FakeAgent*> agents;
  for (int i = 0; i < 4; ++i) {
    agents.push_back(&NewAgent(pia_));
    ASSERT_TRUE(agents.back()->Join());
  }
  Refresh();
  Online(*agents[0], 2 * kOneDay);
  for (FakeAgent* a : agents) a->Heartbeat();
  Outage(*agents[1], 3 * kOneHour, {agents[0], agents[2], agents[3]});
  for (int day = 0; day < 8; ++day) {
    Online(*agents[0], kOneDay);
    for (FakeAgent* a : agents) a->Heartbeat();
  }
  const int commits = faults().Count("INSERT INTO reliability_progress");
  Refresh();  // 4 machines × 10 days behind; a transaction takes machines while 15 days last
  EXPECT_EQ(faults().Count("INSERT INTO reliability_progress") - commits, 2);
  for (FakeAgent* a : agents) {
    const ReliabilityView v = View(a->machine_id);
    EXPECT_NEAR(v.components.uptime, Reference(a->machine_id).components.uptime, 1e-4);
    EXPECT_DOUBLE_EQ(v.scheduled_hours, 243);
  }
  EXPECT_LT(View(agents[1]->machine_id).components.uptime, 1);
}

TEST_P(ReliabilityTest, TheProviderIsToldWhenAScoreFallsBelowTheThresholdAndRecovers) {
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  auto count = [&](const std::string& kind) {
    return Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = ?",
                  {pia_, kind});
  };
  Outage(a, 12 * kOneHour);  // new: nobody is told
  Refresh();
  EXPECT_LT(View(a.machine_id).score, 80);
  EXPECT_TRUE(View(a.machine_id).is_new);
  EXPECT_EQ(count("reliability.low"), 0);
  Online(a, 13 * kOneHour);
  Refresh();
  EXPECT_FALSE(View(a.machine_id).is_new);
  EXPECT_EQ(count("reliability.low"), 1);
  Online(a, kOneHour);
  Refresh();
  EXPECT_EQ(count("reliability.low"), 1) << "once";
  int days = 0;
  while (View(a.machine_id).score < 82 && days < 40) {
    Online(a, kOneDay);
    Refresh();
    ++days;
  }
  EXPECT_LT(days, 40);
  EXPECT_EQ(count("reliability.recovered"), 1);
  // The history holds one snapshot per day passed.
  EXPECT_GE(static_cast<int>(View(a.machine_id).history.size()), std::min(days, 30));
}

TEST_P(ReliabilityTest, ProvidersReadTheirOwnAndAdminsAny) {
  FakeAgent& a = NewAgent(pia_, 1);
  ASSERT_TRUE(a.Join());
  FakeAgent& b = NewAgent(pia_, 3);
  ASSERT_TRUE(b.Join());
  Online(a, 30 * kOneHour);
  b.Heartbeat();
  Outage(b, 20 * kOneHour, {&a});
  a.Heartbeat();
  Refresh();
  EXPECT_EQ(reliability().ForMachine(As(oscar_), a.machine_id, {}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(reliability().ForMachine(As(customer_), a.machine_id, {}).status().code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(reliability().ForMachine(As(admin_), a.machine_id, {}).ok());
  EXPECT_EQ(reliability().ForProvider(As(customer_), {}).status().code(),
            StatusCode::kPermissionDenied);
  auto mine = reliability().ForProvider(As(pia_), {});
  ASSERT_TRUE(mine.ok());
  ASSERT_EQ(mine->machines.size(), 2u);
  const double sa = View(a.machine_id).score, sb = View(b.machine_id).score;
  EXPECT_NEAR(mine->score, (1 * sa + 3 * sb) / 4, 0.01);
  EXPECT_EQ(mine->events.items.size(), 1u);
  // Paging the events.
  auto first = reliability().ForProvider(As(pia_), {1, std::nullopt});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->events.items.size(), 1u);
  EXPECT_FALSE(first->events.next);
  auto oscars = reliability().ForProvider(As(oscar_), {});
  ASSERT_TRUE(oscars.ok());
  EXPECT_TRUE(oscars->machines.empty());
}

// On PostgreSQL the instances of a cluster change the scores one at a time: a refresh waits
// for the advisory lock another instance's refresh holds until that one commits.
TEST_P(ReliabilityTest, OnPostgresARefreshWaitsForTheLockAnotherInstanceHolds) {
  if (db().Backend() != store::BackendKind::kPostgres) {
    GTEST_SKIP() << "a PostgreSQL advisory lock; SQLite has one writer at a time anyway";
  }
  FakeAgent& a = NewAgent(pia_);
  ASSERT_TRUE(a.Join());
  Online(a, kOneHour);
  std::atomic<bool> releasing{false};
  std::promise<void> locked;
  std::thread other([&] {
    bool once = false;
    Status st = db().Transact([&](store::Tx& tx) -> Status {
      GPUNEX_RETURN_IF_ERROR(
          tx.Query("SELECT pg_advisory_xact_lock(?)", {kScoresLockKey}).status());
      if (!once) locked.set_value();
      once = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      releasing = true;  // before the commit that releases the lock
      return Status::Ok();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
  });
  locked.get_future().wait();
  Refresh();
  EXPECT_TRUE(releasing) << "the refresh ran while another instance held the lock";
  other.join();
}

GPUNEX_INSTANTIATE_BACKENDS(ReliabilityTest);
GPUNEX_INSTANTIATE_BACKENDS(ReliabilityCatchUpTest);

// The kinds are spelt on the wire as they always were, and each reads back as itself.
TEST(ReliabilityEventKindTest, EachKindHasOneNameThatReadsBack) {
  EXPECT_EQ(Name(ReliabilityEventKind::kOutage), "outage");
  EXPECT_EQ(Name(ReliabilityEventKind::kJobEnded), "job_ended");
  EXPECT_EQ(Name(ReliabilityEventKind::kBenchmarkDegraded), "benchmark_degraded");
  EXPECT_EQ(Name(ReliabilityEventKind::kThrottling), "throttling");
  gpunex::testing::ExpectEachNameReadsBack(kReliabilityEventKindNames,
                                           ReliabilityEventKind::kThrottling);
}

}  // namespace
}  // namespace gpunex::platform::reliability
