// Throw-away databases for tests: SQLite in a fresh temporary directory, or a freshly
// created PostgreSQL database on the server GPUNEX_TEST_PG_URL names (dropped again by
// the destructor). Suites that must hold on both backends are parameterised over
// TestBackends() (INSTANTIATE_TEST_SUITE_P(..., ::testing::ValuesIn(TestBackends()))):
// "sqlite" always, "postgresql" as well when the variable is set; a test given
// "postgresql" without it skips.
//
// Thread-safety: a TestDatabase is used like the Database it holds.
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
