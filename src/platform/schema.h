// gpunexd's database schema: every module's migrations in the order of the module list
// (modules.h; each folder declares its own in <folder>_store.cc and names them in its
// module; store/migrations.h applies them). A new folder's migrations take versions after
// the newest there.
#pragma once

#include <vector>

#include "common/status.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::schema {

// Every folder's migrations, in the order their parts of one version run.
const std::vector<store::Migration>& AllMigrations();

// The version the newest migration brings the schema to.
int LatestVersion();

// Applies every migration not yet applied.
Status MigrateAll(store::Database& db);

// Writes the data every module needs in every database (Module::seed), after MigrateAll.
Status SeedAll(store::Database& db);

}  // namespace gpunex::platform::schema
