// Versioned schema migrations, applied in order at start. Each migration runs in its
// own transaction together with the row that records it in schema_migrations, so a
// crash leaves the schema at a whole version. On PostgreSQL an advisory lock makes
// concurrent starts of several gpunexd instances apply each migration once.
#pragma once

#include "common/status.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

// Applies every migration not yet recorded. Fails with kFailedPrecondition when the
// database has a version newer than this binary knows.
Status Migrate(Database& db);

// The version the newest migration brings the schema to.
int LatestSchemaVersion();

// The version recorded in the database (0 for an empty database).
StatusOr<int> CurrentSchemaVersion(Database& db);

}  // namespace gpunex::platform::store
