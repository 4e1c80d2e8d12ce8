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

#include "common/paging.h"
#include "common/status.h"
#include "common/time.h"
#include "platform/availability/schedule.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::availability {

struct ScheduleRow {
  std::string machine_id;
  Schedule schedule;
  std::string source;  // application | provider | default
  Timestamp updated_at;
  std::optional<std::string> updated_by;
  Timestamp next_check_at;
};

struct MaintenanceRow {
  std::string id;  // "mnt_..."
  std::string machine_id;
  Timestamp start;
  Timestamp end;
  std::string category;  // power | internet | disk | gpu | software | other
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
