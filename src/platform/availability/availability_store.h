// The availability folder's tables and the only SQL that touches them:
//   machine_schedules    one row per machine: its weekly schedule (the applications
//                        store's document form), where it came from, and when the facts
//                        reported to the fleet (inside the schedule, in maintenance) must
//                        be decided again;
//   maintenance_windows  the one-off windows declared per machine, kept after they end or
//                        are cancelled.
// A machine without a row is available always.
//
// An AvailabilityStore is a view of one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/enum_names.h"
#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/availability/schedule.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::availability {

// Where a machine's schedule came from: its provider's approved application, the provider
// since, or none ("always").
enum class ScheduleSource { kApplication, kProvider, kDefault };
inline constexpr EnumNames<ScheduleSource, 3> kScheduleSourceNames{{{
    {ScheduleSource::kApplication, "application"},
    {ScheduleSource::kProvider, "provider"},
    {ScheduleSource::kDefault, "default"},
}}};
inline std::string_view Name(ScheduleSource s) { return kScheduleSourceNames.Name(s); }

// What a maintenance window is for, as the provider declares it.
enum class MaintenanceCategory { kPower, kInternet, kDisk, kGpu, kSoftware, kOther };
inline constexpr EnumNames<MaintenanceCategory, 6> kMaintenanceCategoryNames{{{
    {MaintenanceCategory::kPower, "power"},
    {MaintenanceCategory::kInternet, "internet"},
    {MaintenanceCategory::kDisk, "disk"},
    {MaintenanceCategory::kGpu, "gpu"},
    {MaintenanceCategory::kSoftware, "software"},
    {MaintenanceCategory::kOther, "other"},
}}};
inline std::string_view Name(MaintenanceCategory c) { return kMaintenanceCategoryNames.Name(c); }

// Where a maintenance window stands (not stored: from the time and its cancellation).
// upcoming → active → ended as time passes; upcoming → cancelled by the provider, and
// only then: a window cannot be cancelled once it has started.
enum class MaintenanceState { kUpcoming, kActive, kEnded, kCancelled };
inline constexpr EnumNames<MaintenanceState, 4> kMaintenanceStateNames{{{
    {MaintenanceState::kUpcoming, "upcoming"},
    {MaintenanceState::kActive, "active"},
    {MaintenanceState::kEnded, "ended"},
    {MaintenanceState::kCancelled, "cancelled"},
}}};
inline std::string_view Name(MaintenanceState s) { return kMaintenanceStateNames.Name(s); }
constexpr bool MaintenanceMayGo(MaintenanceState from, MaintenanceState to) {
  switch (from) {
    case MaintenanceState::kUpcoming:
      return to != MaintenanceState::kUpcoming;  // ended, when looked at only after it
    case MaintenanceState::kActive:
      return to == MaintenanceState::kEnded;
    case MaintenanceState::kEnded:
    case MaintenanceState::kCancelled:
      return false;
  }
  return false;
}

struct ScheduleRow {
  std::string machine_id;
  Schedule schedule;
  ScheduleSource source = ScheduleSource::kDefault;
  Timestamp updated_at;
  std::optional<std::string> updated_by;
  Timestamp next_check_at;
};

struct MaintenanceRow {
  std::string id;  // "mnt_..."
  std::string machine_id;
  Timestamp start;
  Timestamp end;
  MaintenanceCategory category = MaintenanceCategory::kOther;
  std::string reason;
  Timestamp declared_at;
  std::string declared_by;
  std::optional<Timestamp> cancelled_at;
  bool soon_notified = false;  // the provider was told an hour before
};

class AvailabilityStore {
 public:
  explicit AvailabilityStore(store::Tx& tx) : tx_(tx) {}

  StatusOr<std::optional<ScheduleRow>> FindSchedule(const std::string& machine_id);
  // Every machine's schedule, by machine id.
  StatusOr<std::map<std::string, ScheduleRow>> AllSchedules();
  Status UpsertSchedule(const ScheduleRow& row);
  // The machines whose facts are due to be decided at `now`.
  StatusOr<std::vector<std::string>> DueMachines(Timestamp now, int limit);
  Status SetNextCheck(const std::string& machine_id, Timestamp at);
  // A text that changes whenever a schedule is written (store/coordination.h).
  StatusOr<std::string> ChangeMark();

  Status InsertMaintenance(const MaintenanceRow& row);
  StatusOr<std::optional<MaintenanceRow>> FindMaintenance(const std::string& machine_id,
                                                          const std::string& id);
  // The machine's windows, newest start first.
  StatusOr<Page<MaintenanceRow>> ListMaintenance(const std::string& machine_id,
                                                 const PageRequest& page);
  // Windows not cancelled that overlap [from, to), of one machine or (machine_id "") of
  // every machine, by machine and start.
  StatusOr<std::vector<MaintenanceRow>> MaintenanceOverlapping(const std::string& machine_id,
                                                               Timestamp from, Timestamp to);
  StatusOr<int64_t> CountUpcoming(const std::string& machine_id, Timestamp now);
  Status CancelMaintenance(const std::string& id, Timestamp at);
  // Windows not cancelled starting in (now, now + lead] whose provider was not told yet.
  StatusOr<std::vector<MaintenanceRow>> StartingSoon(Timestamp now, Duration lead);
  Status MarkSoonNotified(const std::string& id);

 private:
  store::Tx& tx_;
};

// The folder's migrations: its part of version 10.
std::vector<store::Migration> AvailabilityMigrations();

}  // namespace gpunex::platform::availability
