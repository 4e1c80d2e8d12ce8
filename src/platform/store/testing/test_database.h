// Throw-away databases for tests: SQLite in a fresh temporary directory, or a freshly
// created PostgreSQL database on the server GPUNEX_TEST_PG_URL names (dropped again by
// the destructor). Suites that must hold on both backends are parameterised over
// TestBackends() (INSTANTIATE_TEST_SUITE_P(..., ::testing::ValuesIn(TestBackends()))):
// "sqlite" always, "postgresql" as well when the variable is set; a test given
// "postgresql" without it skips.
//
// OpenMigrated gives a database already at a schema: on PostgreSQL a copy (CREATE
// DATABASE ... TEMPLATE) of one this process migrated once per set of migrations, as
// applying every migration to each test's database took most of a PostgreSQL test's time
// (about half a second under the sanitizers); the templates are dropped at exit.
//
// Thread-safety: a TestDatabase is used like the Database it holds; Open and OpenMigrated
// may be called from any thread.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::store::testing {

// "sqlite", plus "postgresql" when GPUNEX_TEST_PG_URL is set.
std::vector<std::string> TestBackends();

class TestDatabase {
 public:
  // kFailedPrecondition (tests skip on it) for "postgresql" without GPUNEX_TEST_PG_URL.
  static StatusOr<std::unique_ptr<TestDatabase>> Open(const std::string& backend);
  // Open, then `migrations` applied (Migrate's result where it fails).
  static StatusOr<std::unique_ptr<TestDatabase>> OpenMigrated(
      const std::string& backend, const std::vector<Migration>& migrations);
  ~TestDatabase();

  Database& db() { return *db_; }
  // The SQLite data directory ("" for PostgreSQL).
  const std::filesystem::path& dir() const { return dir_; }

  // Applies `migrations` (typically schema::AllMigrations()).
  Status Migrate(const std::vector<Migration>& migrations) {
    return store::Migrate(*db_, migrations);
  }

  // The rows of one read-only query; fails the way Tx::Query does.
  StatusOr<Rows> Query(const std::string& sql, const std::vector<Value>& params = {});
  // Runs one statement in its own transaction.
  Status Exec(const std::string& sql, const std::vector<Value>& params = {});

 private:
  TestDatabase() = default;
  std::filesystem::path dir_;
  std::string admin_url_, dbname_;
  std::unique_ptr<Database> db_;
};

}  // namespace gpunex::platform::store::testing
