#include "platform/schema.h"

#include "platform/modules.h"

namespace gpunex::platform::schema {

const std::vector<store::Migration>& AllMigrations() {
  static const std::vector<store::Migration> all = MigrationsOf(Modules());
  return all;
}

int LatestVersion() { return store::LatestVersion(AllMigrations()); }

Status MigrateAll(store::Database& db) { return store::Migrate(db, AllMigrations()); }

Status SeedAll(store::Database& db) {
  for (const Module& m : Modules()) {
    if (m.seed) GPUNEX_RETURN_IF_ERROR(m.seed(db));
  }
  return Status::Ok();
}

}  // namespace gpunex::platform::schema
