// Availability (PRC-2): each machine's weekly schedule and its one-off maintenance
// windows, and what they mean for its GPUs' listing.
//
// A machine's GPUs are offered only inside its schedule and outside maintenance. This
// folder decides both facts for each machine and reports them to the fleet
// (fleet::ReportAvailabilityFacts), which decides the listing (listing/listing.h:
// "outside_schedule" with the time it opens again, "in_maintenance"). It decides them when
// a schedule or a window changes, and again at the next instant either fact changes (each
// machine's next check is stored, and TickOnce() runs every tick_ms).
//
// A new machine starts from its provider's approved application: the availability of
// the entry for its GPU model, else of the first entry (applications::ApprovedAvailability);
// "always" without one. The provider changes it per machine or for all machines at once.
//
// Maintenance windows are declared ahead (start not in the past, at most 90 days ahead,
// at most 7 days long, not overlapping another window of the machine, at most 50 to come
// per machine) and cancellable until they start. How they count for the reliability score
// (planned when declared 24 h ahead, 8 h in 30 days) is reliability/formula.h's. The
// provider is told an hour before a window starts; hooks registered with
// OnMaintenanceDeclared run in the transaction that declares one (rentals tell their
// customers).
//
// Authorization: the machine's provider and admins read; only the provider changes
// anything (admins get kPermissionDenied); anyone else gets kNotFound.
//
// The tables are availability_store.h's. Thread-safety: thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/background.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/time.h"
#include "platform/accounts/accounts.h"
#include "platform/availability/availability_store.h"
#include "platform/availability/schedule.h"
#include "platform/fleet/fleet.h"
#include "platform/notify/notify.h"
#include "platform/store/db.h"

namespace gpunex::platform::availability {

inline constexpr Duration kMaxMaintenanceLength = 7 * kOneDay;
inline constexpr Duration kMaxMaintenanceAhead = 90 * kOneDay;
inline constexpr int64_t kMaxUpcomingMaintenance = 50;
inline constexpr size_t kMinReasonLength = 10;  // characters
inline constexpr size_t kMaxReasonLength = 300;
inline constexpr Duration kMaintenanceNoticeLead = kOneHour;
inline constexpr int kMaxUpcomingIntervals = 50;

struct MachineAvailability {
  std::string machine_id;
  Schedule schedule;
  ScheduleSource source = ScheduleSource::kDefault;
  Timestamp updated_at;
  bool inside_schedule = true;
  bool in_maintenance = false;
  std::optional<Timestamp> next_change_at;  // when inside_schedule flips next
  std::vector<Interval> upcoming;           // scheduled time in the next 7 days
};

struct MaintenanceWindow {
  MaintenanceRow row;
  bool planned = false;  // declared at least 24 h ahead
  MaintenanceState state = MaintenanceState::kUpcoming;
};

struct DeclareMaintenanceRequest {
  std::optional<Timestamp> start;
  std::optional<Timestamp> end;
  std::string category;  // as the client wrote it: kMaintenanceCategoryNames validates it
  std::string reason;
};

struct AvailabilityOptions {
  int tick_ms = 250;
  notify::NoticeSettings notices;
  const Clock* clock = &SystemClock();
};

class Availability {
 public:
  // Registers a hello hook on `fleet` (the schedule of a new machine).
  // REQUIRES: before the fleet is scheduled.
  Availability(store::Database& db, fleet::Fleet& fleet, AvailabilityOptions options);
  Availability(const Availability&) = delete;
  Availability& operator=(const Availability&) = delete;

  // Schedules TickOnce() every tick_ms.
  void ScheduleOn(Background& background);
  // Decides the facts of the machines whose next check has come, and tells providers of
  // windows starting within the hour.
  Status TickOnce();

  StatusOr<MachineAvailability> Get(const accounts::Principal& p, const std::string& machine_id);
  // Field errors under "schedule".
  StatusOr<MachineAvailability> SetSchedule(const accounts::Principal& p,
                                            const std::string& machine_id, Schedule schedule);
  // Every machine of the provider; the number of machines.
  StatusOr<int64_t> SetScheduleForAll(const accounts::Principal& p, Schedule schedule);

  StatusOr<Page<MaintenanceWindow>> ListMaintenance(const accounts::Principal& p,
                                                    const std::string& machine_id,
                                                    const PageRequest& page);
  // Field errors under start, end, category, reason.
  StatusOr<MaintenanceWindow> Declare(const accounts::Principal& p, const std::string& machine_id,
                                      const DeclareMaintenanceRequest& req);
  // kFailedPrecondition once it has started or when already cancelled.
  StatusOr<MaintenanceWindow> Cancel(const accounts::Principal& p, const std::string& machine_id,
                                     const std::string& window_id);

  // Hooks are kept for the life of this object: whatever they reach must outlive it.
  // Runs in the transaction that declares a window. REQUIRES: before ScheduleOn().
  using MaintenanceHook =
      std::function<Status(store::Tx& tx, Timestamp now, const MaintenanceWindow& window)>;
  void OnMaintenanceDeclared(MaintenanceHook hook);
  // Runs in the transaction that changes a machine's schedule, before the change is written
  // (the reliability score accounts the time until now under the old schedule).
  // REQUIRES: before ScheduleOn().
  using ScheduleHook =
      std::function<Status(store::Tx& tx, Timestamp now, const std::string& machine_id)>;
  void OnScheduleChanging(ScheduleHook hook);

 private:
  Status OnHello(store::Tx& tx, Timestamp now, const fleet::HelloFacts& hello);
  Status WriteSchedule(store::Tx& tx, Timestamp now, const std::string& machine_id,
                       const Schedule& schedule, ScheduleSource source,
                       const std::optional<std::string>& by);
  Status NotifySoon(Timestamp now);

  store::Database& db_;
  const AvailabilityOptions options_;
  std::vector<MaintenanceHook> declared_hooks_;  // set before ScheduleOn(), then read-only
  std::vector<ScheduleHook> schedule_hooks_;     // likewise
};

// --- functions over the caller's transaction, for other folders

// The machine's schedule ("always" when it has none).
StatusOr<Schedule> ScheduleOf(store::Tx& tx, const std::string& machine_id);
// Decides whether the machine is inside its schedule and in maintenance now, reports it to
// the fleet, and stores when to decide again.
Status DecideFacts(store::Tx& tx, Timestamp now, const std::string& machine_id);
// A window as the API shows it, at `now`.
MaintenanceWindow ViewOf(MaintenanceRow row, Timestamp now);

}  // namespace gpunex::platform::availability
