// The store: gpunexd's durable state behind one SQL-level interface with two backends,
// SQLite (default: one file in the data directory, WAL) and PostgreSQL (several gpunexd
// instances on one database). Domain code (accounts, applications, notify, ...) writes
// its queries once, in the portable SQL subset both backends share:
//   - '?' placeholders (the PostgreSQL backend renumbers them to $1, $2, ...);
//   - types TEXT, BIGINT (all integers, booleans as 0/1, times as Unix microseconds),
//     DOUBLE PRECISION; ids are TEXT made by NewId();
//   - INSERT ... ON CONFLICT ... DO NOTHING/UPDATE, RETURNING, LIMIT.
// Schema changes are versioned migrations (migrations.h) applied at start.
//
// Thread-safety: a Database is shared by all threads; each Transact/Read call runs on
// its own connection from a pool. A Tx is used only by the thread running the callback
// and only until the callback returns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace gpunex::platform::store {

// A statement parameter or result cell. Booleans travel as int64 0/1.
using Value = std::variant<std::nullptr_t, int64_t, double, std::string>;

// One result row. Accessors take the 0-based column index.
class Row {
 public:
  explicit Row(std::vector<Value> cells) : cells_(std::move(cells)) {}
  size_t size() const { return cells_.size(); }
  const Value& operator[](size_t i) const { return cells_.at(i); }
  bool IsNull(size_t i) const { return std::holds_alternative<std::nullptr_t>(cells_.at(i)); }
  // REQUIRES: the cell is an integer (a double with an integral value is accepted).
  int64_t Int(size_t i) const;
  std::optional<int64_t> OptInt(size_t i) const;
  // REQUIRES: the cell is a number.
  double Real(size_t i) const;
  // REQUIRES: the cell is text (an integer is formatted).
  std::string Str(size_t i) const;
  std::optional<std::string> OptStr(size_t i) const;
  bool Bool(size_t i) const { return Int(i) != 0; }
  // A time stored as Unix microseconds (time.h).
  Timestamp Time(size_t i) const { return FromUnixMicros(Int(i)); }
  std::optional<Timestamp> OptTime(size_t i) const;

 private:
  std::vector<Value> cells_;
};
using Rows = std::vector<Row>;

// The database engines a Database runs on: a closed set, so that a comparison with a
// misspelt name cannot compile.
enum class BackendKind { kSqlite, kPostgres };
// "sqlite" or "postgresql": the name logs, /readyz and the configuration use.
std::string_view BackendName(BackendKind kind);

// A transaction in progress.
class Tx {
 public:
  virtual ~Tx() = default;
  // For the rare statement that differs between the engines.
  virtual BackendKind Backend() const = 0;
  // Runs one statement and returns its rows (none for statements without results).
  // Failure: kAlreadyExists for a unique/primary-key violation, kAborted for a conflict
  // that makes the whole transaction retryable, kInternal otherwise. After a failure the
  // transaction must not be used again except to return the error.
  virtual StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& params = {}) = 0;
  // Runs one statement and returns the number of rows it changed.
  virtual StatusOr<int64_t> Exec(std::string_view sql, const std::vector<Value>& params = {}) = 0;

  // Runs `fn` once this transaction has committed, on the committing thread, after the
  // commit and in the order registered: for effects outside the database that must not
  // happen for a transaction that rolls back (waking the email outbox, sending an agent
  // its new command). Never runs when the transaction rolls back, when its commit fails
  // or its outcome is unknown; a retried attempt starts with none registered. `fn` must
  // not throw (an exception is logged and dropped).
  void AfterCommit(std::function<void()> fn) { after_commit_.push_back(std::move(fn)); }

  // For backends: the callbacks registered so far, handed over once.
  std::vector<std::function<void()>> TakeAfterCommit() { return std::move(after_commit_); }

 private:
  std::vector<std::function<void()>> after_commit_;
};

// For backends: runs the callbacks a committed transaction registered (Tx::AfterCommit).
void RunAfterCommit(std::vector<std::function<void()>> callbacks);

// An exclusive lock shared by every process of one database (Database::TryLock), held
// until it is destroyed.
class Lock {
 public:
  virtual ~Lock() = default;
  // Whether it is still held: a PostgreSQL lock ends with its connection, and a holder
  // checks this between steps of long work.
  virtual bool Held() = 0;
};

class Database {
 public:
  virtual ~Database() = default;

  virtual BackendKind Backend() const = 0;

  // Runs `fn` in a serializable read-write transaction. Commits when `fn` returns OK,
  // rolls back and returns its status otherwise. When the backend reports a conflict
  // (SQLite busy, PostgreSQL serialization failure or deadlock) the transaction is rolled
  // back and `fn` runs again, up to a bounded number of attempts; `fn` must therefore have
  // no effects outside the transaction (it registers them with Tx::AfterCommit). Returns
  // kUnavailable when the database cannot be reached (nothing was committed), and
  // kOutcomeUnknown when the connection was lost during COMMIT (it may have committed:
  // re-read before acting on either outcome).
  virtual Status Transact(const std::function<Status(Tx&)>& fn) = 0;

  // Runs `fn` in a read-only transaction (a consistent snapshot).
  virtual Status Read(const std::function<Status(Tx&)>& fn) = 0;

  // Cheap liveness check for /readyz.
  virtual Status Ping() = 0;

  // Takes the lock named `name` when nobody holds it, and returns nullptr when somebody
  // does (one payout run at a time across gpunexd instances). On PostgreSQL it is a
  // session advisory lock on a connection of its own, outside the pool; on SQLite, whose
  // file one process serves, a lock within the process. Fails with kUnavailable when the
  // database cannot be reached.
  virtual StatusOr<std::unique_ptr<Lock>> TryLock(std::string_view name) = 0;
};

struct SqliteOptions {
  int pool_size = 8;  // connections
  int busy_timeout_ms = 5000;
};

// Opens (creating if needed) `<data_dir>/gpunex.db` in WAL mode with full fsync.
StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& data_dir,
                                                       SqliteOptions options = {});

struct PostgresOptions {
  int pool_size = 8;
};

// Connects to a "postgresql://" or "postgres://" URL.
StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& url,
                                                         PostgresOptions options = {});

// A PostgreSQL URL selects PostgreSQL; otherwise SQLite in `data_dir`.
StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& database_url,
                                                 const std::string& data_dir);

// Rewrites '?' placeholders outside string literals and quoted identifiers to $1, $2, ...
std::string NumberPlaceholders(std::string_view sql);

}  // namespace gpunex::platform::store
