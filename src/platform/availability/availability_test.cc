// Availability with a real Fleet on both backends: a new machine's schedule from its
// provider's application, schedules and maintenance windows hiding GPUs and showing them
// again at the right instants (FakeClock, TickOnce called directly), what is refused and
// that a refusal changes nothing, who may do what, and the notice an hour before.
#include "platform/availability/availability.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "platform/applications/applications_store.h"
#include "platform/fleet/test_util.h"
#include "platform/notify/notify.h"

namespace gpunex::platform::availability {
namespace {

using fleet::testing::FakeAgent;
using ::testing::HasSubstr;

Timestamp At(std::string_view rfc3339) { return *ParseRfc3339(rfc3339); }

Schedule Weekly(std::string zone, std::vector<applications::Window> windows) {
  Schedule s;
  s.always = false;
  s.timezone = std::move(zone);
  s.windows = std::move(windows);
  return s;
}

const std::vector<std::string> kEveryDay = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

class AvailabilityTest : public fleet::testing::FleetTestBase {
 protected:
  void SetUp() override {
    FleetTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    clock_.Set(At("2026-12-01T10:00:00Z"));  // a Tuesday
    MakeAvailability();
  }
  void TearDown() override {
    availability_.reset();
    FleetTestBase::TearDown();
  }
  void MakeAvailability() {
    AvailabilityOptions o;
    o.clock = &clock_;
    availability_ = std::make_unique<Availability>(faults(), fleet(), o);
  }
  Availability& availability() { return *availability_; }

  // Pia's machine with two GPUs, online.
  FakeAgent& Machine() {
    FakeAgent& a = NewAgent(pia_);
    EXPECT_TRUE(a.Join().has_value());
    return a;
  }

  void Approve(const std::string& user_id, Schedule availability, std::string model) {
    ASSERT_TRUE(db().Transact([&](store::Tx& tx) -> Status {
                      applications::ApplicationRow row;
                      row.id = "app_" + user_id;
                      row.user_id = user_id;
                      row.status = applications::ApplicationStatus::kApproved;
                      applications::GpuEntry other;
                      other.model = "l4-24gb";
                      other.availability = Schedule{};
                      applications::GpuEntry mine;
                      mine.model = std::move(model);
                      mine.availability = std::move(availability);
                      row.body.gpus = {other, mine};
                      row.suggested_tier = applications::Tier::kCommunity;
                      row.created_at = row.updated_at = clock_.Now();
                      return applications::ApplicationsStore(tx).Insert(row);
                    })
                    .ok());
  }

  DeclareMaintenanceRequest Window(Timestamp start, Duration length,
                                   std::string reason = "replacing the PSU") {
    return {start, start + length, "power", std::move(reason)};
  }

  std::unique_ptr<Availability> availability_;
};

TEST_P(AvailabilityTest, ANewMachineStartsFromTheApplicationEntryOfItsModel) {
  Approve(pia_, Weekly("Europe/Rome", {{{"mon", "tue"}, "08:00", "20:00"}}), "h100-sxm-80gb");
  FakeAgent& a = Machine();
  auto got = availability().Get(As(pia_), a.machine_id);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Name(got->source), "application");
  EXPECT_FALSE(got->schedule.always);
  EXPECT_EQ(got->schedule.timezone, "Europe/Rome");
  // 10:00 UTC is 11:00 in Rome on a Tuesday: inside, until 20:00 Rome = 19:00 UTC.
  EXPECT_TRUE(got->inside_schedule);
  EXPECT_EQ(got->next_change_at, At("2026-12-01T19:00:00Z"));
  ASSERT_FALSE(got->upcoming.empty());
  EXPECT_EQ(got->upcoming[1].start, At("2026-12-07T07:00:00Z"));  // Monday 08:00 Rome
}

TEST_P(AvailabilityTest, WithoutAnApplicationAMachineIsAvailableAlways) {
  FakeAgent& a = Machine();
  auto got = availability().Get(As(pia_), a.machine_id);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->schedule.always);
  EXPECT_EQ(Name(got->source), "default");
  EXPECT_TRUE(got->inside_schedule);
  EXPECT_EQ(got->next_change_at, std::nullopt);
  for (const auto& g : GpuIds(a.machine_id)) EXPECT_EQ(ListingOf(g), "listed");
}

TEST_P(AvailabilityTest, OutsideTheScheduleTheGpusAreHiddenUntilItOpens) {
  FakeAgent& a = Machine();
  // 14:00–15:00 UTC every day; now is 10:00.
  auto set = availability().SetSchedule(As(pia_), a.machine_id,
                                        Weekly("UTC", {{kEveryDay, "14:00", "15:00"}}));
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_FALSE(set->inside_schedule);
  EXPECT_EQ(set->next_change_at, At("2026-12-01T14:00:00Z"));
  const std::vector<std::string> gpus = GpuIds(a.machine_id);
  for (const auto& g : gpus) {
    EXPECT_EQ(ListingOf(g), "outside_schedule");
    EXPECT_EQ(Text("SELECT listing_note FROM machine_gpus WHERE id = ?", {g}),
              "outside availability schedule until 2026-12-01T14:00:00.000Z");
  }
  clock_.Set(At("2026-12-01T13:59:59Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpus[0]), "outside_schedule");
  clock_.Set(At("2026-12-01T14:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  for (const auto& g : gpus) EXPECT_EQ(ListingOf(g), "listed");
  clock_.Set(At("2026-12-01T15:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpus[0]), "outside_schedule");
}

TEST_P(AvailabilityTest, AWindowAcrossMidnightListsUntilTheMorning) {
  FakeAgent& a = Machine();
  clock_.Set(At("2026-12-04T23:30:00Z"));  // Friday
  ASSERT_TRUE(availability()
                  .SetSchedule(As(pia_), a.machine_id, Weekly("UTC", {{{"fri"}, "22:00", "06:00"}}))
                  .ok());
  const std::string gpu = GpuIds(a.machine_id)[0];
  EXPECT_EQ(ListingOf(gpu), "listed");
  clock_.Set(At("2026-12-05T05:59:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpu), "listed");
  clock_.Set(At("2026-12-05T06:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpu), "outside_schedule");
}

TEST_P(AvailabilityTest, OneScheduleForEveryMachineOfTheProvider) {
  FakeAgent& a = Machine();
  FakeAgent& b = Machine();
  FakeAgent& other = NewAgent(oscar_);
  ASSERT_TRUE(other.Join().has_value());
  auto n = availability().SetScheduleForAll(As(pia_), Weekly("UTC", {{{"sun"}, "00:00", "01:00"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(ListingOf(GpuIds(a.machine_id)[0]), "outside_schedule");
  EXPECT_EQ(ListingOf(GpuIds(b.machine_id)[0]), "outside_schedule");
  EXPECT_EQ(ListingOf(GpuIds(other.machine_id)[0]), "listed");
}

TEST_P(AvailabilityTest, MaintenanceHidesTheGpusWhileItLasts) {
  FakeAgent& a = Machine();
  const std::string gpu = GpuIds(a.machine_id)[0];
  auto w = availability().Declare(As(pia_), a.machine_id,
                                  Window(At("2026-12-02T12:00:00Z"), 2 * kOneHour));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(w->planned);  // 26 h ahead
  EXPECT_EQ(Name(w->state), "upcoming");
  EXPECT_EQ(ListingOf(gpu), "listed");
  clock_.Set(At("2026-12-02T12:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpu), "in_maintenance");
  auto got = availability().Get(As(pia_), a.machine_id);
  EXPECT_TRUE(got->in_maintenance);
  // Started: it cannot be cancelled any more.
  auto cancel = availability().Cancel(As(pia_), a.machine_id, w->row.id);
  EXPECT_EQ(cancel.status().code(), StatusCode::kFailedPrecondition);
  clock_.Set(At("2026-12-02T14:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(gpu), "listed");
  auto list = availability().ListMaintenance(As(pia_), a.machine_id, {});
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(Name(list->items[0].state), "ended");
}

TEST_P(AvailabilityTest, AWindowDeclaredLessThanADayAheadIsNotPlanned) {
  FakeAgent& a = Machine();
  auto w =
      availability().Declare(As(pia_), a.machine_id, Window(At("2026-12-02T09:00:00Z"), kOneHour));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->planned);  // 23 h ahead
}

TEST_P(AvailabilityTest, CancellingBeforeTheStartKeepsTheGpusListed) {
  FakeAgent& a = Machine();
  auto w =
      availability().Declare(As(pia_), a.machine_id, Window(At("2026-12-01T11:00:00Z"), kOneHour));
  ASSERT_TRUE(w.ok());
  auto c = availability().Cancel(As(pia_), a.machine_id, w->row.id);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(Name(c->state), "cancelled");
  EXPECT_EQ(availability().Cancel(As(pia_), a.machine_id, w->row.id).status().code(),
            StatusCode::kFailedPrecondition);
  clock_.Set(At("2026-12-01T11:30:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(GpuIds(a.machine_id)[0]), "listed");
  // The cancelled window no longer blocks its time.
  EXPECT_TRUE(availability()
                  .Declare(As(pia_), a.machine_id, Window(At("2026-12-01T12:00:00Z"), kOneHour))
                  .ok());
}

TEST_P(AvailabilityTest, BadWindowsAreRefusedByFieldAndChangeNothing) {
  FakeAgent& a = Machine();
  ASSERT_TRUE(availability()
                  .Declare(As(pia_), a.machine_id, Window(At("2026-12-03T10:00:00Z"), kOneHour))
                  .ok());
  const std::string before =
      fleet::testing::Snapshot(test_db()) + Text("SELECT COUNT(*) || '' FROM maintenance_windows");
  struct Case {
    DeclareMaintenanceRequest req;
    std::string field;
    std::string message;
  };
  const Timestamp now = clock_.Now();
  const std::vector<Case> cases = {
      {{std::nullopt, now + kOneHour, "power", "a long reason"}, "start", "is required"},
      {{now + kOneHour, std::nullopt, "power", "a long reason"}, "end", "is required"},
      {Window(now - kOneMinute, kOneHour), "start", "must not be in the past"},
      {Window(now + 91 * kOneDay, kOneHour), "start", "must be at most 90 days ahead"},
      {{now + kOneHour, now + kOneHour, "power", "a long reason"}, "end", "must be after start"},
      {{now + 2 * kOneHour, now + kOneHour, "power", "a long reason"},
       "end",
       "must be after start"},
      {Window(now + kOneHour, 7 * kOneDay + kOneSecond), "end",
       "must be at most 7 days after start"},
      {{now + kOneHour, now + 2 * kOneHour, "lunch", "a long reason"},
       "category",
       "must be one of power, internet, disk, gpu, software, other"},
      {{now + kOneHour, now + 2 * kOneHour, "", "a long reason"}, "category", "is required"},
      {Window(now + kOneHour, kOneHour, "too short"), "reason", "must be 10 to 300 characters"},
      {Window(now + kOneHour, kOneHour, std::string(301, 'x')), "reason",
       "must be 10 to 300 characters"},
      {Window(now + kOneHour, kOneHour, "          "), "reason", "is required"},
      {Window(now + kOneHour, kOneHour, "bad\x01 control chars"), "reason",
       "must not contain control characters"},
      {Window(At("2026-12-03T10:30:00Z"), kOneHour), "start", "overlaps maintenance window "},
  };
  for (const Case& c : cases) {
    auto r = availability().Declare(As(pia_), a.machine_id, c.req);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << c.field;
    ASSERT_EQ(r.status().fields().count(c.field), 1u) << c.field << r.status().ToString();
    EXPECT_THAT(r.status().fields().at(c.field), HasSubstr(c.message));
  }
  EXPECT_EQ(
      fleet::testing::Snapshot(test_db()) + Text("SELECT COUNT(*) || '' FROM maintenance_windows"),
      before);
  // 300 characters of text (multi-byte) are fine.
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "é";
  for (int i = 0; i < 150; ++i) accents += "a";
  auto ok = availability().Declare(As(pia_), a.machine_id,
                                   Window(now + 30 * kOneHour, kOneHour, accents));
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_TRUE(availability().Cancel(As(pia_), a.machine_id, ok->row.id).ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM maintenance_windows WHERE cancelled_at IS NULL"), 1);
}

TEST_P(AvailabilityTest, BadSchedulesAreRefusedAndChangeNothing) {
  FakeAgent& a = Machine();
  const std::string before =
      fleet::testing::Snapshot(test_db()) +
      Text("SELECT schedule FROM machine_schedules WHERE machine_id = ?", {a.machine_id});
  const std::vector<std::pair<Schedule, std::string>> cases = {
      {Weekly("Mars/Olympus", {{{"mon"}, "08:00", "20:00"}}), "schedule.timezone"},
      {Weekly("", {{{"mon"}, "08:00", "20:00"}}), "schedule.timezone"},
      {Weekly("UTC", {}), "schedule.windows"},
      {Weekly("UTC", {{{"mon", "mon"}, "08:00", "20:00"}}), "schedule.windows[0].days"},
      {Weekly("UTC", {{{"monday"}, "08:00", "20:00"}}), "schedule.windows[0].days"},
      {Weekly("UTC", {{{}, "08:00", "20:00"}}), "schedule.windows[0].days"},
      {Weekly("UTC", {{{"mon"}, "24:00", "20:00"}}), "schedule.windows[0].start"},
      {Weekly("UTC", {{{"mon"}, "8:00", "20:00"}}), "schedule.windows[0].start"},
      {Weekly("UTC", {{{"mon"}, "08:00", "24:01"}}), "schedule.windows[0].end"},
      {Weekly("UTC", {{{"mon"}, "08:00", "08:00"}}), "schedule.windows[0].end"},
  };
  for (const auto& [schedule, field] : cases) {
    auto r = availability().SetSchedule(As(pia_), a.machine_id, schedule);
    ASSERT_EQ(r.status().code(), StatusCode::kValidationFailed) << field;
    EXPECT_EQ(r.status().fields().count(field), 1u) << field << ": " << r.status().ToString();
    EXPECT_EQ(availability().SetScheduleForAll(As(pia_), schedule).status().code(),
              StatusCode::kValidationFailed);
  }
  EXPECT_EQ(fleet::testing::Snapshot(test_db()) +
                Text("SELECT schedule FROM machine_schedules WHERE machine_id = ?", {a.machine_id}),
            before);
}

TEST_P(AvailabilityTest, OnlyTheOwnerChangesAndAdminsRead) {
  FakeAgent& a = Machine();
  const Schedule s = Weekly("UTC", {{{"mon"}, "08:00", "20:00"}});
  EXPECT_EQ(availability().Get(As(oscar_), a.machine_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(availability().Get(As(customer_), a.machine_id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(availability().Get(As(admin_), a.machine_id).ok());
  EXPECT_EQ(availability().SetSchedule(As(oscar_), a.machine_id, s).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(availability().SetSchedule(As(admin_), a.machine_id, s).status().code(),
            StatusCode::kPermissionDenied);
  const auto w = Window(clock_.Now() + kOneHour, kOneHour);
  EXPECT_EQ(availability().Declare(As(oscar_), a.machine_id, w).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(availability().Declare(As(admin_), a.machine_id, w).status().code(),
            StatusCode::kPermissionDenied);
  auto mine = availability().Declare(As(pia_), a.machine_id, w);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(availability().Cancel(As(oscar_), a.machine_id, mine->row.id).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(availability().ListMaintenance(As(oscar_), a.machine_id, {}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(availability().ListMaintenance(As(admin_), a.machine_id, {})->items.size(), 1u);
  // A window of one machine is not reachable through another.
  FakeAgent& b = Machine();
  EXPECT_EQ(availability().Cancel(As(pia_), b.machine_id, mine->row.id).status().code(),
            StatusCode::kNotFound);
}

TEST_P(AvailabilityTest, TheProviderIsToldAnHourBeforeOnce) {
  FakeAgent& a = Machine();
  std::vector<std::string> declared;
  availability().OnMaintenanceDeclared(
      [&](store::Tx&, Timestamp, const MaintenanceWindow& w) -> Status {
        declared.push_back(w.row.id);
        return Status::Ok();
      });
  auto w =
      availability().Declare(As(pia_), a.machine_id, Window(At("2026-12-01T14:00:00Z"), kOneHour));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(declared, std::vector<std::string>{w->row.id});
  auto count = [&] {
    return Number("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND kind = ?",
                  {pia_, "maintenance.soon"});
  };
  clock_.Set(At("2026-12-01T12:59:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(count(), 0);
  clock_.Set(At("2026-12-01T13:00:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(count(), 1);
  // The subject has fixed words only (the machine name is in the body).
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE subject = ?",
                   {"gpunex: a maintenance window starts within the hour"}),
            1);
  clock_.Set(At("2026-12-01T13:30:00Z"));
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(count(), 1);
}

TEST_P(AvailabilityTest, AFailedDeclarationLeavesNothing) {
  FakeAgent& a = Machine();
  faults().FailStatement("INSERT INTO audit_events", Unavailable("disk full"));
  auto w = availability().Declare(As(pia_), a.machine_id,
                                  Window(clock_.Now() + 10 * kOneMinute, kOneHour));
  EXPECT_FALSE(w.ok());
  faults().Clear();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM maintenance_windows"), 0);
  clock_.Advance(20 * kOneMinute);
  ASSERT_TRUE(availability().TickOnce().ok());
  EXPECT_EQ(ListingOf(GpuIds(a.machine_id)[0]), "listed");
}

GPUNEX_INSTANTIATE_BACKENDS(AvailabilityTest);

// upcoming → active → ended, or upcoming → cancelled; nothing leaves an end.
TEST(MaintenanceStatesTest, AWindowIsCancelledOnlyBeforeItStarts) {
  using enum MaintenanceState;
  static_assert(MaintenanceMayGo(kUpcoming, kActive));
  static_assert(MaintenanceMayGo(kUpcoming, kCancelled));
  static_assert(MaintenanceMayGo(kActive, kEnded));
  static_assert(!MaintenanceMayGo(kActive, kCancelled));
  static_assert(!MaintenanceMayGo(kEnded, kCancelled));
  static_assert(!MaintenanceMayGo(kCancelled, kCancelled));
  static_assert(!MaintenanceMayGo(kCancelled, kActive));
}

// The tables of names: each value has one, and reads back as itself.
TEST(MaintenanceStatesTest, EachValueHasOneNameThatReadsBack) {
  for (const auto& [s, name] : kMaintenanceStateNames.entries) {
    EXPECT_EQ(kMaintenanceStateNames.Parse(name), s) << name;
  }
  for (const auto& [c, name] : kMaintenanceCategoryNames.entries) {
    EXPECT_EQ(kMaintenanceCategoryNames.Parse(name), c) << name;
  }
  for (const auto& [s, name] : kScheduleSourceNames.entries) {
    EXPECT_EQ(kScheduleSourceNames.Parse(name), s) << name;
  }
  EXPECT_EQ(kMaintenanceCategoryNames.Listed(),
            "\"power\", \"internet\", \"disk\", \"gpu\", \"software\" or \"other\"");
  EXPECT_EQ(Name(ScheduleSource::kDefault), "default");
  EXPECT_THROW(kMaintenanceStateNames.ParseStored("Active"), std::invalid_argument);
}

}  // namespace
}  // namespace gpunex::platform::availability
