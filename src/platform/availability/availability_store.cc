#include "platform/availability/availability_store.h"

#include "common/json.h"
#include "platform/applications/applications_store.h"
#include "platform/store/coordination.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"

namespace gpunex::platform::availability {
namespace {

using store::KeyColumn;

std::string ScheduleText(const Schedule& s) { return applications::StoredAvailabilityText(s); }

// A schedule row with its schedule still as text: one that does not read fails the query,
// naming the machine.
struct StoredSchedule {
  ScheduleRow row;
  std::string schedule;
};

const store::RowMapper<StoredSchedule>& ScheduleRows() {
  using S = StoredSchedule;
  static const auto* const m = new store::RowMapper<S>({
      {"machine_id", [](S& s, const store::Cell& c) { s.row.machine_id = c.Str(); }},
      {"schedule", &S::schedule},
      {"source",
       [](S& s, const store::Cell& c) {
         s.row.source = kScheduleSourceNames.ParseStored(c.Str());
       }},
      {"updated_at", [](S& s, const store::Cell& c) { s.row.updated_at = c.Time(); }},
      {"updated_by", [](S& s, const store::Cell& c) { s.row.updated_by = c.OptStr(); }},
      {"next_check_at", [](S& s, const store::Cell& c) { s.row.next_check_at = c.Time(); }},
  });
  return *m;
}

StatusOr<ScheduleRow> ScheduleFrom(StoredSchedule s) {
  auto schedule = applications::ParseStoredAvailability(s.schedule);
  if (!schedule.ok()) {
    return Internal("machine " + s.row.machine_id + ": schedule: " + schedule.status().message());
  }
  s.row.schedule = std::move(*schedule);
  return std::move(s.row);
}

const store::RowMapper<MaintenanceRow>& MaintenanceRows() {
  using M = MaintenanceRow;
  static const auto* const m = new store::RowMapper<M>({
      {"id", &M::id},
      {"machine_id", &M::machine_id},
      {"start_at", &M::start},
      {"end_at", &M::end},
      {"category",
       [](M& m, const store::Cell& c) {
         m.category = kMaintenanceCategoryNames.ParseStored(c.Str());
       }},
      {"reason", &M::reason},
      {"declared_at", &M::declared_at},
      {"declared_by", &M::declared_by},
      {"cancelled_at", &M::cancelled_at},
      {"soon_notified", &M::soon_notified},
  });
  return *m;
}

}  // namespace

StatusOr<std::optional<ScheduleRow>> AvailabilityStore::FindSchedule(
    const std::string& machine_id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + ScheduleRows().Select() +
                                        " FROM machine_schedules WHERE machine_id = ?",
                                    {machine_id}));
  GPUNEX_ASSIGN_OR_RETURN(std::optional<StoredSchedule> stored, ScheduleRows().First(rows));
  if (!stored) return std::optional<ScheduleRow>();
  GPUNEX_ASSIGN_OR_RETURN(ScheduleRow row, ScheduleFrom(std::move(*stored)));
  return std::optional<ScheduleRow>(std::move(row));
}

StatusOr<std::map<std::string, ScheduleRow>> AvailabilityStore::AllSchedules() {
  GPUNEX_ASSIGN_OR_RETURN(
      store::Rows rows,
      tx_.Query(std::string("SELECT ") + ScheduleRows().Select() + " FROM machine_schedules"));
  GPUNEX_ASSIGN_OR_RETURN(std::vector<StoredSchedule> stored, ScheduleRows().Decode(rows));
  std::map<std::string, ScheduleRow> out;
  for (StoredSchedule& s : stored) {
    GPUNEX_ASSIGN_OR_RETURN(ScheduleRow row, ScheduleFrom(std::move(s)));
    std::string id = row.machine_id;
    out.emplace(std::move(id), std::move(row));
  }
  return out;
}

Status AvailabilityStore::UpsertSchedule(const ScheduleRow& row) {
  return tx_
      .Exec(std::string("INSERT INTO machine_schedules (") + ScheduleRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (machine_id) DO UPDATE SET "
                "schedule = excluded.schedule, source = excluded.source, updated_at = "
                "excluded.updated_at, updated_by = excluded.updated_by, next_check_at = "
                "excluded.next_check_at",
            {row.machine_id, ScheduleText(row.schedule), std::string(Name(row.source)),
             ToUnixMicros(row.updated_at),
             row.updated_by ? store::Value(*row.updated_by) : store::Value(nullptr),
             ToUnixMicros(row.next_check_at)})
      .status();
}

StatusOr<std::vector<std::string>> AvailabilityStore::DueMachines(Timestamp now, int limit) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT machine_id FROM machine_schedules WHERE "
                                    "next_check_at <= ? ORDER BY next_check_at, machine_id LIMIT ?",
                                    {ToUnixMicros(now), int64_t{limit}}));
  std::vector<std::string> out;
  for (const store::Row& r : rows) out.push_back(r["machine_id"].Str());
  return out;
}

Status AvailabilityStore::SetNextCheck(const std::string& machine_id, Timestamp at) {
  return tx_
      .Exec("UPDATE machine_schedules SET next_check_at = ? WHERE machine_id = ?",
            {ToUnixMicros(at), machine_id})
      .status();
}

StatusOr<std::string> AvailabilityStore::ChangeMark() {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT MAX(updated_at) FROM machine_schedules"));
  return store::MarkOf(rows.at(0));
}

Status AvailabilityStore::InsertMaintenance(const MaintenanceRow& m) {
  return tx_
      .Exec(std::string("INSERT INTO maintenance_windows (") + MaintenanceRows().Names() +
                ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, 0)",
            {m.id, m.machine_id, ToUnixMicros(m.start), ToUnixMicros(m.end),
             std::string(Name(m.category)), m.reason, ToUnixMicros(m.declared_at), m.declared_by})
      .status();
}

StatusOr<std::optional<MaintenanceRow>> AvailabilityStore::FindMaintenance(
    const std::string& machine_id, const std::string& id) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + MaintenanceRows().Select() +
                                        " FROM maintenance_windows WHERE id = ? AND machine_id = ?",
                                    {id, machine_id}));
  return MaintenanceRows().First(rows);
}

StatusOr<Page<MaintenanceRow>> AvailabilityStore::ListMaintenance(const std::string& machine_id,
                                                                  const PageRequest& page) {
  store::PageQuery q{MaintenanceRows().Select(),
                     "FROM maintenance_windows",
                     "machine_id = ?",
                     {machine_id},
                     {{"start_at", KeyColumn::Type::kInt}, {"id", KeyColumn::Type::kText}},
                     true};
  GPUNEX_ASSIGN_OR_RETURN(Page<store::Row> rows, store::QueryPage(tx_, q, page));
  return MaintenanceRows().DecodePage(rows);
}

StatusOr<std::vector<MaintenanceRow>> AvailabilityStore::MaintenanceOverlapping(
    const std::string& machine_id, Timestamp from, Timestamp to) {
  std::string sql = std::string("SELECT ") + MaintenanceRows().Select() +
                    " FROM maintenance_windows WHERE cancelled_at IS NULL AND start_at < ? AND "
                    "end_at > ?";
  std::vector<store::Value> params{ToUnixMicros(to), ToUnixMicros(from)};
  if (!machine_id.empty()) {
    sql += " AND machine_id = ?";
    params.emplace_back(machine_id);
  }
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(sql + " ORDER BY machine_id, start_at, id", params));
  return MaintenanceRows().Decode(rows);
}

StatusOr<int64_t> AvailabilityStore::CountUpcoming(const std::string& machine_id, Timestamp now) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query("SELECT COUNT(*) AS n FROM maintenance_windows WHERE "
                                    "machine_id = ? AND cancelled_at IS NULL AND end_at > ?",
                                    {machine_id, ToUnixMicros(now)}));
  return rows[0]["n"].Int();
}

Status AvailabilityStore::CancelMaintenance(const std::string& id, Timestamp at) {
  return tx_
      .Exec("UPDATE maintenance_windows SET cancelled_at = ? WHERE id = ?", {ToUnixMicros(at), id})
      .status();
}

StatusOr<std::vector<MaintenanceRow>> AvailabilityStore::StartingSoon(Timestamp now,
                                                                      Duration lead) {
  GPUNEX_ASSIGN_OR_RETURN(store::Rows rows,
                          tx_.Query(std::string("SELECT ") + MaintenanceRows().Select() +
                                        " FROM maintenance_windows WHERE cancelled_at IS NULL "
                                        "AND soon_notified = 0 AND start_at > ? AND start_at <= ? "
                                        "ORDER BY start_at, id",
                                    {ToUnixMicros(now), ToUnixMicros(now + lead)}));
  return MaintenanceRows().Decode(rows);
}

Status AvailabilityStore::MarkSoonNotified(const std::string& id) {
  return tx_.Exec("UPDATE maintenance_windows SET soon_notified = 1 WHERE id = ?", {id}).status();
}

std::vector<store::Migration> AvailabilityMigrations() {
  return {
      {10,
       "availability",
       "availability: machine schedules and maintenance windows",
       {
           // next_check_at: when the facts reported to the fleet must be decided again.
           R"(CREATE TABLE machine_schedules (
                machine_id TEXT PRIMARY KEY REFERENCES machines(id),
                schedule TEXT NOT NULL,
                source TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                updated_by TEXT,
                next_check_at BIGINT NOT NULL))",
           "CREATE INDEX machine_schedules_check ON machine_schedules (next_check_at)",
           R"(CREATE TABLE maintenance_windows (
                id TEXT PRIMARY KEY,
                machine_id TEXT NOT NULL REFERENCES machines(id),
                start_at BIGINT NOT NULL,
                end_at BIGINT NOT NULL,
                category TEXT NOT NULL,
                reason TEXT NOT NULL,
                declared_at BIGINT NOT NULL,
                declared_by TEXT NOT NULL,
                cancelled_at BIGINT,
                soon_notified BIGINT NOT NULL))",
           "CREATE INDEX maintenance_windows_machine ON maintenance_windows (machine_id, start_at)",
           "CREATE INDEX maintenance_windows_start ON maintenance_windows (start_at)",
           "CREATE INDEX maintenance_windows_end ON maintenance_windows (end_at)",
           // Machines that exist keep being available always.
           "INSERT INTO machine_schedules (machine_id, schedule, source, updated_at, updated_by, "
           "next_check_at) SELECT id, '{\"kind\":\"always\"}', 'default', created_at, NULL, 0 "
           "FROM machines",
       },
       {}},
  };
}

}  // namespace gpunex::platform::availability
