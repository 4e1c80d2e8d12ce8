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

#include <concepts>
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

// The names of a result's columns, in order, as the backend reports them (the alias of
// `expr AS name`; the bare column of `t.column`). One list is shared by all rows of a
// result.
using ColumnNames = std::vector<std::string>;

// One cell of a row, with its column's name for messages. A view: the Row it came from
// must outlive it.
//
// The conversions are those both backends need: PostgreSQL may hand an integer over as
// a double or as text. A conversion the cell does not allow (NULL where a value is
// required, text that is no number) is a bug in the query: it throws std::logic_error (or
// std::invalid_argument), which the backend's Transact/Read turns into kInternal, and
// which RowMapper returns as kInternal.
class Cell {
 public:
  Cell(std::string_view column, const Value& value) : column_(column), value_(&value) {}
  std::string_view column() const { return column_; }
  const Value& value() const { return *value_; }
  bool IsNull() const { return std::holds_alternative<std::nullptr_t>(*value_); }
  // REQUIRES: the cell is an integer (a double is rounded, text is parsed).
  int64_t Int() const;
  std::optional<int64_t> OptInt() const;
  // REQUIRES: the cell is a number.
  double Real() const;
  // REQUIRES: the cell is not NULL (a number is formatted).
  std::string Str() const;
  std::optional<std::string> OptStr() const;
  bool Bool() const { return Int() != 0; }
  // A time stored as Unix microseconds (time.h).
  Timestamp Time() const { return FromUnixMicros(Int()); }
  std::optional<Timestamp> OptTime() const;

 private:
  std::string_view column_;
  const Value* value_;
};

template <typename T>
class RowMapper;

// One result row. Domain code reads a row by column name, never by position: a
// RowMapper (rows.h) binds the names of a record's columns to positions once per query;
// a small query reads its few cells by name (`SELECT COUNT(*) AS n ...`, then
// `row["n"].Int()`).
class Row {
 public:
  Row(std::shared_ptr<const ColumnNames> names, std::vector<Value> cells)
      : names_(std::move(names)), cells_(std::move(cells)) {}
  size_t size() const { return cells_.size(); }
  const ColumnNames& names() const;
  // The cell of the first column named `name`. REQUIRES: the result has such a column
  // (otherwise throws std::logic_error, which the backend turns into kInternal).
  Cell operator[](std::string_view name) const;
  // The cell of a row of one column (`SELECT MAX(at) FROM ...`), for code that runs SQL
  // it is given. REQUIRES: exactly one column (otherwise throws std::logic_error).
  Cell Only() const;
  // Reading by position is for RowMapper and the backends only: a number in brackets is
  // refused at compile time (instead of converting 0 to a null string).
  template <std::integral I>
  Cell operator[](I) const = delete;

 private:
  template <typename T>
  friend class RowMapper;
  friend std::string MarkOf(const Row& row);

  Cell At(size_t i) const;

  std::shared_ptr<const ColumnNames> names_;  // never null when made by a backend
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
