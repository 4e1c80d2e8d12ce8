#include "platform/store/migrations.h"

#include <algorithm>
#include <map>

namespace gpunex::platform::store {
namespace {

StatusOr<int> VersionIn(Tx& tx) {
  GPUNEX_ASSIGN_OR_RETURN(
      Rows rows, tx.Query("SELECT COALESCE(MAX(version), 0) AS version FROM schema_migrations"));
  return static_cast<int>(rows.at(0)["version"].Int());
}

}  // namespace

int LatestVersion(const std::vector<Migration>& migrations) {
  int latest = 0;
  for (const Migration& m : migrations) latest = std::max(latest, m.version);
  return latest;
}

StatusOr<int> CurrentSchemaVersion(Database& db) {
  int version = 0;
  GPUNEX_RETURN_IF_ERROR(db.Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Rows exists, tx.Query(tx.Backend() == BackendKind::kPostgres
                                                      ? "SELECT 1 FROM information_schema.tables "
                                                        "WHERE table_name = 'schema_migrations'"
                                                      : "SELECT 1 FROM sqlite_master "
                                                        "WHERE type = 'table' "
                                                        "AND name = 'schema_migrations'"));
    if (exists.empty()) return Status::Ok();
    GPUNEX_ASSIGN_OR_RETURN(version, VersionIn(tx));
    return Status::Ok();
  }));
  return version;
}

Status Migrate(Database& db, const std::vector<Migration>& migrations) {
  std::map<int, std::vector<const Migration*>> by_version;
  for (const Migration& m : migrations) by_version[m.version].push_back(&m);
  const int latest = LatestVersion(migrations);
  GPUNEX_RETURN_IF_ERROR(db.Transact([](Tx& tx) -> Status {
    return tx
        .Exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
        .status();
  }));
  for (const auto& [version, parts] : by_version) {
    GPUNEX_RETURN_IF_ERROR(db.Transact([&, version = version, &parts = parts](Tx& tx) -> Status {
      if (tx.Backend() == BackendKind::kPostgres) {
        // Serialises concurrent migrators; released at commit.
        GPUNEX_RETURN_IF_ERROR(tx.Query("SELECT pg_advisory_xact_lock(7403001)").status());
      }
      GPUNEX_ASSIGN_OR_RETURN(int current, VersionIn(tx));
      if (current > latest) {
        return FailedPrecondition("the database schema is version " + std::to_string(current) +
                                  ", newer than this gpunexd knows (" + std::to_string(latest) +
                                  ")");
      }
      if (current >= version) return Status::Ok();
      std::string name;
      for (const Migration* m : parts) {
        name += (name.empty() ? "" : "; ") + m->owner + ": " + m->name;
        for (const std::string& sql : m->statements) {
          auto r = tx.Exec(sql);
          if (!r.ok()) {
            if (r.status().code() == StatusCode::kAborted) return r.status();
            return Internal("migration " + std::to_string(version) + " (" + m->owner +
                            ") failed: " + r.status().message());
          }
        }
        if (m->step) {
          Status st = m->step(tx);
          if (!st.ok()) {
            if (st.code() == StatusCode::kAborted) return st;
            return Internal("migration " + std::to_string(version) + " (" + m->owner +
                            ") failed: " + st.ToString());
          }
        }
      }
      return tx
          .Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                {int64_t{version}, name, ToUnixMicros(SystemClock().Now())})
          .status();
    }));
  }
  return Status::Ok();
}

}  // namespace gpunex::platform::store
