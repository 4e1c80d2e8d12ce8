// gpunexd's database schema: every domain folder's migrations in order (each folder
// declares its own in <folder>_store.cc; store/migrations.h applies them).
//
// A new folder with tables adds its <Folder>Migrations() to AllMigrations() in schema.cc,
// with versions after the newest there.
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

}  // namespace gpunex::platform::schema
