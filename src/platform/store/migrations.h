// Versioned schema migrations, applied in order at start. Each domain folder owns its
// tables and declares the migrations that create and change them in its
// <folder>_store.cc; platform/schema.cc lists every folder's, and Migrate applies them.
//
// Versions are one sequence for the whole database (schema_migrations records each
// version once). A version normally belongs to one folder; the first releases created
// several folders' tables under one version, so a version may have parts from several
// folders: all parts of a version run in one transaction, in the order given.
//
// Append only: a migration that has shipped is never edited; a change is a new version.
// Each version runs in its own transaction together with its schema_migrations row, so a
// crash leaves the schema at a whole version. On PostgreSQL an advisory lock makes
// concurrent starts of several gpunexd instances apply each version once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {

struct Migration {
  int version = 0;
  std::string owner;  // the folder whose tables it changes: "accounts", "fleet", ...
  std::string name;
  // Statements in the portable subset (db.h), run in order.
  std::vector<std::string> statements;
  // Run after the statements, for changes that need code (rewriting stored documents).
  // Must be deterministic and idempotent within its version.
  std::function<Status(Tx&)> step;
};

// Applies every version of `migrations` not yet recorded, oldest first. Fails with
// kFailedPrecondition when the database has a version newer than the newest in
// `migrations`, and with kInternal naming the version when a statement fails.
Status Migrate(Database& db, const std::vector<Migration>& migrations);

// The newest version in `migrations` (0 when empty).
int LatestVersion(const std::vector<Migration>& migrations);

// The version recorded in the database (0 for an empty database).
StatusOr<int> CurrentSchemaVersion(Database& db);

}  // namespace gpunex::platform::store
