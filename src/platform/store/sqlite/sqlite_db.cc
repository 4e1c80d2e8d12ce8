// SQLite backend: one database file in the data directory, WAL journal, full fsync.
// Writers are serialised by BEGIN IMMEDIATE (SQLite allows one writer at a time);
// readers run concurrently on their own connections.

#include <sqlite3.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>
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

class SqliteTx final : public Tx {
 public:
  explicit SqliteTx(sqlite3* db) : db_(db) {}
  std::string_view Backend() const override { return "sqlite"; }

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
  Status Run(std::string_view sql, const std::vector<Value>& params, Rows* rows) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, "prepare");
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(stmt, sqlite3_finalize);
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
    for (;;) {
      rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return SqliteError(db_, sqlite3_extended_errcode(db_), "step");
      if (!rows) continue;
      int n = sqlite3_column_count(stmt);
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
      rows->emplace_back(std::move(cells));
    }
  }

  sqlite3* db_;
};

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, SqliteOptions options)
      : path_(std::move(path)), options_(options) {}

  ~SqliteDatabase() override {
    for (sqlite3* c : idle_) sqlite3_close_v2(c);
  }

  Status Init() {
    GPUNEX_ASSIGN_OR_RETURN(sqlite3 * c, Connect());
    char* err = nullptr;
    int rc = sqlite3_exec(c, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string m = err ? err : "";
      sqlite3_free(err);
      sqlite3_close_v2(c);
      return Internal("cannot enable WAL on " + path_ + ": " + m);
    }
    Release(c);
    return Status::Ok();
  }

  std::string_view Backend() const override { return "sqlite"; }

  Status Transact(const std::function<Status(Tx&)>& fn) override {
    return RunTx("BEGIN IMMEDIATE", fn);
  }
  Status Read(const std::function<Status(Tx&)>& fn) override { return RunTx("BEGIN", fn); }

  Status Ping() override {
    return Read([](Tx& tx) { return tx.Query("SELECT 1").status(); });
  }

 private:
  StatusOr<sqlite3*> Connect() {
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
    sqlite3_exec(c, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", nullptr, nullptr, nullptr);
    return c;
  }

  StatusOr<sqlite3*> Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.pool_size; });
    if (!idle_.empty()) {
      sqlite3* c = idle_.back();
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

  void Release(sqlite3* c) {
    std::lock_guard g(mu_);
    idle_.push_back(c);
    cv_.notify_one();
  }

  Status RunTx(const char* begin, const std::function<Status(Tx&)>& fn) {
    GPUNEX_ASSIGN_OR_RETURN(sqlite3 * c, Acquire());
    std::unique_ptr<sqlite3, std::function<void(sqlite3*)>> guard(
        c, [this](sqlite3* p) { Release(p); });
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
      SqliteTx tx(c);
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
  std::vector<sqlite3*> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;                // GUARDED_BY(mu_)
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
