// SQLite backend: one database file in the data directory, WAL journal, full fsync.
// Writers are serialised by BEGIN IMMEDIATE (SQLite allows one writer at a time);
// readers run concurrently on their own connections. Each connection keeps its prepared
// statements by SQL text (at most kMaxCachedStatements, then it starts over), so that a
// statement run again is bound and stepped, not compiled again.

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {
namespace {

bool IsBusy(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string msg = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (IsBusy(rc)) return Aborted(msg);
  if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
    return AlreadyExists(msg);
  }
  return Internal(msg);
}

constexpr size_t kMaxCachedStatements = 256;

// One connection and its prepared statements. Used by one transaction at a time.
struct Connection {
  sqlite3* db = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> statements;

  void ClearStatements() {
    for (auto& [sql, stmt] : statements) sqlite3_finalize(stmt);
    statements.clear();
  }
  ~Connection() {
    ClearStatements();
    sqlite3_close_v2(db);
  }
};

// Resets a cached statement after use, so that it holds no read lock and no bindings.
struct StatementReset {
  void operator()(sqlite3_stmt* stmt) const {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
  }
};

class SqliteTx final : public Tx {
 public:
  explicit SqliteTx(Connection& c) : conn_(c), db_(c.db) {}
  BackendKind Backend() const override { return BackendKind::kSqlite; }

  StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& params) override {
    Rows rows;
    GPUNEX_RETURN_IF_ERROR(Run(sql, params, &rows));
    return rows;
  }

  StatusOr<int64_t> Exec(std::string_view sql, const std::vector<Value>& params) override {
    GPUNEX_RETURN_IF_ERROR(Run(sql, params, nullptr));
    return static_cast<int64_t>(sqlite3_changes(db_));
  }

 private:
  StatusOr<sqlite3_stmt*> Prepare(std::string_view sql) {
    auto it = conn_.statements.find(std::string(sql));
    if (it != conn_.statements.end()) return it->second;
    if (conn_.statements.size() >= kMaxCachedStatements) conn_.ClearStatements();
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, "prepare");
    if (stmt == nullptr) return Internal("empty statement");
    conn_.statements.emplace(std::string(sql), stmt);
    return stmt;
  }

  Status Run(std::string_view sql, const std::vector<Value>& params, Rows* rows) {
    GPUNEX_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    std::unique_ptr<sqlite3_stmt, StatementReset> guard(stmt);
    int rc = SQLITE_OK;
    if (static_cast<int>(params.size()) != sqlite3_bind_parameter_count(stmt)) {
      return Internal("statement expects " + std::to_string(sqlite3_bind_parameter_count(stmt)) +
                      " parameters, got " + std::to_string(params.size()));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      int idx = static_cast<int>(i + 1);
      const Value& v = params[i];
      if (std::holds_alternative<std::nullptr_t>(v)) {
        rc = sqlite3_bind_null(stmt, idx);
      } else if (auto p = std::get_if<int64_t>(&v)) {
        rc = sqlite3_bind_int64(stmt, idx, *p);
      } else if (auto d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(stmt, idx, *d);
      } else {
        const auto& s = std::get<std::string>(v);
        rc = sqlite3_bind_text(stmt, idx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return SqliteError(db_, rc, "bind");
    }
    std::shared_ptr<const ColumnNames> names;  // one list for all rows of the result
    for (;;) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return SqliteError(db_, sqlite3_extended_errcode(db_), "step");
      if (!rows) continue;
      int n = sqlite3_column_count(stmt);
      if (!names) {
        auto list = std::make_shared<ColumnNames>();
        list->reserve(n);
        for (int c = 0; c < n; ++c) {
          const char* name = sqlite3_column_name(stmt, c);
          list->emplace_back(name ? name : "");
        }
        names = std::move(list);
      }
      std::vector<Value> cells;
      cells.reserve(n);
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_NULL:
            cells.emplace_back(nullptr);
            break;
          case SQLITE_INTEGER:
            cells.emplace_back(int64_t{sqlite3_column_int64(stmt, c)});
            break;
          case SQLITE_FLOAT:
            cells.emplace_back(sqlite3_column_double(stmt, c));
            break;
          default: {
            const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            cells.emplace_back(std::string(t ? t : "", sqlite3_column_bytes(stmt, c)));
          }
        }
      }
      rows->emplace_back(names, std::move(cells));
    }
  }

  Connection& conn_;
  sqlite3* db_;
};

// The names of the locks this process holds (TryLock), per database file.
std::mutex lock_names_mu;
std::set<std::string>& LockNames() {
  static auto* names = new std::set<std::string>();
  return *names;
}

class ProcessLock final : public Lock {
 public:
  explicit ProcessLock(std::string key) : key_(std::move(key)) {}
  ~ProcessLock() override {
    std::lock_guard<std::mutex> l(lock_names_mu);
    LockNames().erase(key_);
  }
  bool Held() override { return true; }

 private:
  std::string key_;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, SqliteOptions options)
      : path_(std::move(path)), options_(options) {}

  ~SqliteDatabase() override {
    for (Connection* c : idle_) delete c;
  }

  Status Init() {
    GPUNEX_ASSIGN_OR_RETURN(Connection * c, Connect());
    char* err = nullptr;
    int rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string m = err ? err : "";
      sqlite3_free(err);
      delete c;
      return Internal("cannot enable WAL on " + path_ + ": " + m);
    }
    Release(c);
    return Status::Ok();
  }

  BackendKind Backend() const override { return BackendKind::kSqlite; }

  Status Transact(const std::function<Status(Tx&)>& fn) override {
    return RunTx("BEGIN IMMEDIATE", fn);
  }
  Status Read(const std::function<Status(Tx&)>& fn) override { return RunTx("BEGIN", fn); }

  StatusOr<std::unique_ptr<Lock>> TryLock(std::string_view name) override {
    std::string key = path_ + "\n" + std::string(name);
    std::lock_guard<std::mutex> l(lock_names_mu);
    if (!LockNames().insert(key).second) return std::unique_ptr<Lock>();
    return std::unique_ptr<Lock>(std::make_unique<ProcessLock>(std::move(key)));
  }

  Status Ping() override {
    return Read([](Tx& tx) { return tx.Query("SELECT 1").status(); });
  }

 private:
  StatusOr<Connection*> Connect() {
    sqlite3* c = nullptr;
    int rc =
        sqlite3_open_v2(path_.c_str(), &c,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      Status st =
          Unavailable("cannot open " + path_ + ": " + (c ? sqlite3_errmsg(c) : sqlite3_errstr(rc)));
      sqlite3_close_v2(c);
      return st;
    }
    sqlite3_busy_timeout(c, options_.busy_timeout_ms);
    // A page cache of 32 MiB per connection (SQLite's default is 2 MiB), and the file
    // mapped for reads, so that large scans (a metering tick over every running rental)
    // do not copy every page from the OS again.
    sqlite3_exec(c,
                 "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-32768; "
                 "PRAGMA mmap_size=268435456;",
                 nullptr, nullptr, nullptr);
    auto* conn = new Connection;
    conn->db = c;
    return conn;
  }

  StatusOr<Connection*> Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
    if (!idle_.empty()) {
      Connection* c = idle_.back();
      idle_.pop_back();
      return c;
    }
    ++open_;
    lock.unlock();
    auto c = Connect();
    if (!c.ok()) {
      std::lock_guard g(mu_);
      --open_;
      cv_.notify_one();
    }
    return c;
  }

  void Release(Connection* c) {
    std::lock_guard g(mu_);
    idle_.push_back(c);
    cv_.notify_one();
  }

  Status RunTx(const char* begin, const std::function<Status(Tx&)>& fn) {
    GPUNEX_ASSIGN_OR_RETURN(Connection * conn, Acquire());
    std::unique_ptr<Connection, std::function<void(Connection*)>> guard(
        conn, [this](Connection* p) { Release(p); });
    sqlite3* c = conn->db;
    static thread_local std::mt19937 rng{std::random_device{}()};
    Status last;
    for (int attempt = 0; attempt < 20; ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(
            std::uniform_int_distribution<int>(1, 10 * std::min(attempt, 10))(rng)));
      }
      int rc = sqlite3_exec(c, begin, nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) {
        last = SqliteError(c, rc, "begin");
        if (last.code() == StatusCode::kAborted) continue;
        return last;
      }
      SqliteTx tx(*conn);
      Status st;
      try {
        st = fn(tx);
      } catch (const std::exception& e) {
        st = Internal(std::string("transaction callback threw: ") + e.what());
      }
      if (!st.ok()) {
        sqlite3_exec(c, "ROLLBACK", nullptr, nullptr, nullptr);
        if (st.code() == StatusCode::kAborted) {
          last = st;
          continue;
        }
        return st;
      }
      rc = sqlite3_exec(c, "COMMIT", nullptr, nullptr, nullptr);
      if (rc == SQLITE_OK) {
        RunAfterCommit(tx.TakeAfterCommit());
        return Status::Ok();
      }
      last = SqliteError(c, rc, "commit");
      sqlite3_exec(c, "ROLLBACK", nullptr, nullptr, nullptr);
      if (last.code() != StatusCode::kAborted) return last;
    }
    return last;
  }

  const std::string path_;
  const SqliteOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Connection*> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;                   // GUARDED_BY(mu_)
};

}  // namespace

StatusOr<std::unique_ptr<Database>> OpenSqliteDatabase(const std::string& data_dir,
                                                       SqliteOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) return Unavailable("cannot create data directory " + data_dir + ": " + ec.message());
  auto db = std::make_unique<SqliteDatabase>(
      (std::filesystem::path(data_dir) / "gpunex.db").string(), options);
  GPUNEX_RETURN_IF_ERROR(db->Init());
  return std::unique_ptr<Database>(std::move(db));
}

}  // namespace gpunex::platform::store
