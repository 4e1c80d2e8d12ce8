// PostgreSQL backend (libpqxx 6): a pool of connections to one database, shared by
// several gpunexd instances. Transact runs SERIALIZABLE READ WRITE and retries the whole
// callback on serialization failures and deadlocks; Read runs REPEATABLE READ READ ONLY
// (one snapshot for the whole callback). A transaction whose connection is lost before
// COMMIT is also run again, on a fresh connection (the server rolled it back); one lost
// during COMMIT is reported as kOutcomeUnknown, since it may have been applied. As on the
// server, the first failed statement ends the transaction: later statements fail at once
// and the transaction is rolled back even if the callback returns OK.
//
// Parameters travel as untyped text, so the server infers each one's type from its
// context (a column it is compared with or assigned to); a bare `SELECT ?` yields text.
// Result cells are converted by the column's type: integers to int64, floating point and
// numeric to double, bool to 0/1, everything else to text.
//
// Every libpqxx call happens inside a try block here: no exception leaves this file.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "common/log.h"
#include "platform/store/db.h"

namespace gpunex::platform::store {
namespace {

// Attempts of one Transact/Read call before it gives up with kAborted. Generous because
// PostgreSQL gives a transaction that lost a conflict no priority over newcomers: with 8
// threads incrementing one row on a loaded 2-core machine, single calls needed up to 21.
constexpr int kMaxAttempts = 30;
// Upper bound of the randomised wait before a retry.
constexpr std::chrono::microseconds kMaxBackoff{50'000};

// Type OIDs from PostgreSQL's pg_type.dat; fixed across server versions.
constexpr pqxx::oid kBoolOid = 16;
constexpr pqxx::oid kInt8Oid = 20;
constexpr pqxx::oid kInt2Oid = 21;
constexpr pqxx::oid kInt4Oid = 23;
constexpr pqxx::oid kFloat4Oid = 700;
constexpr pqxx::oid kFloat8Oid = 701;
constexpr pqxx::oid kNumericOid = 1700;

// Server messages end in a newline and may span lines (ERROR/DETAIL/HINT); makes one line.
std::string OneLine(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// What a failed libpqxx call means for the transaction and the connection.
struct Failure {
  Status status;
  bool retryable = false;  // a conflict: the whole transaction may succeed if run again
  bool broken = false;     // the connection is unusable and must be discarded
};

// Classifies the exception being handled. REQUIRES: called inside a catch block.
// `conn` decides whether the connection survived: libpqxx reports protocol errors
// (SQLSTATE class 08) as broken_connection even when the connection is still fine.
Failure ClassifyCurrentException(const pqxx::connection_base& conn) {
  Failure f;
  f.broken = !conn.is_open();
  try {
    throw;
  } catch (const pqxx::serialization_failure& e) {
    f.status = Aborted("postgresql: " + OneLine(e.what()));
    f.retryable = true;
  } catch (const pqxx::deadlock_detected& e) {
    f.status = Aborted("postgresql: " + OneLine(e.what()));
    f.retryable = true;
  } catch (const pqxx::in_doubt_error& e) {
    f.status = OutcomeUnknown(
        "postgresql: the connection was lost during COMMIT; the transaction may or may not have "
        "been applied: " +
        OneLine(e.what()));
    f.broken = true;
  } catch (const pqxx::sql_error& e) {
    const std::string& state = e.sqlstate();
    std::string msg = "postgresql: " + OneLine(e.what());
    if (state == "23505") {
      f.status = AlreadyExists(std::move(msg));
    } else if (state == "40001" || state == "40P01") {
      f.status = Aborted(std::move(msg));
      f.retryable = true;
    } else if (f.broken) {
      f.status = Unavailable(std::move(msg));
    } else {
      f.status = Internal(std::move(msg));
    }
  } catch (const pqxx::broken_connection& e) {
    f.status = f.broken ? Unavailable("postgresql: connection lost: " + OneLine(e.what()))
                        : Internal("postgresql: " + OneLine(e.what()));
  } catch (const std::exception& e) {
    f.status = f.broken ? Unavailable("postgresql: " + OneLine(e.what()))
                        : Internal("postgresql: " + OneLine(e.what()));
  } catch (...) {
    f.status = Internal("postgresql: unknown exception");
  }
  // A lost connection rolled the transaction back on the server: running it again on a
  // fresh connection is safe (in-doubt commits excepted, handled by the caller).
  if (f.broken && f.status.code() == StatusCode::kUnavailable) f.retryable = true;
  return f;
}

// Routes server notices and libpqxx warnings to the structured log instead of stderr.
class NoticeLogger final : public pqxx::errorhandler {
 public:
  explicit NoticeLogger(pqxx::connection_base& conn) : pqxx::errorhandler(conn) {}
  bool operator()(const char msg[]) noexcept override {
    try {
      LogWarn("store.postgres.notice", {{"message", OneLine(msg)}});
    } catch (...) {
    }
    return false;  // handled: don't pass it on to libpqxx's default (stderr)
  }
};

// One pooled connection.
struct Conn {
  std::unique_ptr<pqxx::connection> pq;
  std::unique_ptr<NoticeLogger> notices;  // declared after pq: unregisters before pq closes
  bool broken = false;                    // discard instead of returning to the pool
};

StatusOr<Value> CellValue(const pqxx::field& f, pqxx::oid type) {
  if (f.is_null()) return Value(nullptr);
  const char* begin = f.c_str();
  const char* end = begin + f.size();
  switch (type) {
    case kInt2Oid:
    case kInt4Oid:
    case kInt8Oid: {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(begin, end, v);
      if (ec != std::errc() || p != end) break;
      return Value(v);
    }
    case kFloat4Oid:
    case kFloat8Oid:
    case kNumericOid: {
      double v = 0;
      auto [p, ec] = std::from_chars(begin, end, v);
      // Numerics beyond a double's range ("1e400", "1e-400") round like strtod does.
      if (ec == std::errc::result_out_of_range) {
        return Value(std::strtod(std::string(begin, end).c_str(), nullptr));
      }
      if (ec != std::errc() || p != end) break;
      return Value(v);
    }
    case kBoolOid:
      return Value(int64_t{begin[0] == 't' ? 1 : 0});
    default:
      return Value(std::string(begin, end));
  }
  return Internal("postgresql: cannot convert column " + std::string(f.name()) + " value '" +
                  std::string(begin, end) + "' of type " + std::to_string(type));
}

// Text form of a parameter, as the server's input functions accept it.
StatusOr<std::optional<std::string>> ParamText(const Value& v) {
  if (std::holds_alternative<std::nullptr_t>(v)) return std::optional<std::string>();
  if (auto i = std::get_if<int64_t>(&v)) return std::optional<std::string>(std::to_string(*i));
  if (auto d = std::get_if<double>(&v)) {
    if (std::isnan(*d)) return std::optional<std::string>("NaN");
    if (std::isinf(*d)) return std::optional<std::string>(*d > 0 ? "Infinity" : "-Infinity");
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, *d);  // shortest exact round trip
    if (ec != std::errc()) return Internal("postgresql: cannot format a double parameter");
    return std::optional<std::string>(std::string(buf, p));
  }
  const auto& s = std::get<std::string>(v);
  if (s.find('\0') != std::string::npos) {
    return InvalidArgument("postgresql: a text parameter contains a NUL byte");
  }
  return std::optional<std::string>(s);
}

// A Tx over one libpqxx transaction. After the first failed statement the server has
// aborted the transaction; later statements fail at once with the same status, and the
// runner rolls back whatever the callback returns.
class PgTx final : public Tx {
 public:
  PgTx(pqxx::transaction_base& work, const pqxx::connection_base& conn)
      : work_(work), conn_(conn) {}

  BackendKind Backend() const override { return BackendKind::kPostgres; }

  StatusOr<Rows> Query(std::string_view sql, const std::vector<Value>& params) override {
    GPUNEX_ASSIGN_OR_RETURN(pqxx::result r, Run(sql, params));
    Rows rows;
    rows.reserve(r.size());
    const auto ncols = r.columns();
    std::vector<pqxx::oid> types(ncols);
    try {
      auto list = std::make_shared<ColumnNames>();
      list->reserve(ncols);
      for (pqxx::row_size_type c = 0; c < ncols; ++c) {
        types[c] = r.column_type(c);
        const char* name = r.column_name(c);
        list->emplace_back(name ? name : "");
      }
      const std::shared_ptr<const ColumnNames> names = std::move(list);
      for (const auto& row : r) {
        std::vector<Value> cells;
        cells.reserve(ncols);
        for (pqxx::row_size_type c = 0; c < ncols; ++c) {
          GPUNEX_ASSIGN_OR_RETURN(Value v, CellValue(row[c], types[c]));
          cells.push_back(std::move(v));
        }
        rows.emplace_back(names, std::move(cells));
      }
    } catch (const std::exception& e) {
      return Internal(std::string("postgresql: reading the result: ") + e.what());
    }
    return rows;
  }

  StatusOr<int64_t> Exec(std::string_view sql, const std::vector<Value>& params) override {
    GPUNEX_ASSIGN_OR_RETURN(pqxx::result r, Run(sql, params));
    try {
      return static_cast<int64_t>(r.affected_rows());
    } catch (const std::exception& e) {
      return Internal(std::string("postgresql: ") + e.what());
    }
  }

  // OK, or the first failure of a statement in this transaction.
  const Failure& failure() const { return failure_; }

 private:
  StatusOr<pqxx::result> Run(std::string_view sql, const std::vector<Value>& params) {
    if (!failure_.status.ok()) {
      return Status(failure_.status.code(),
                    "the transaction already failed: " + failure_.status.message());
    }
    std::vector<std::optional<std::string>> texts;
    texts.reserve(params.size());
    for (const Value& v : params) {
      auto t = ParamText(v);
      if (!t.ok()) return t.status();  // nothing ran: the transaction is still usable
      texts.push_back(std::move(*t));
    }
    // libpqxx reads a null const char* as SQL NULL.
    std::vector<const char*> ptrs;
    ptrs.reserve(texts.size());
    for (const auto& t : texts) ptrs.push_back(t ? t->c_str() : nullptr);
    try {
      return work_.exec_params(NumberPlaceholders(sql), pqxx::prepare::make_dynamic_params(ptrs));
    } catch (...) {
      failure_ = ClassifyCurrentException(conn_);
      return failure_.status;
    }
  }

  pqxx::transaction_base& work_;
  const pqxx::connection_base& conn_;
  Failure failure_;
};

// A session advisory lock on a connection of its own (Database::TryLock): released when
// the connection closes, by the destructor or by the server when the process dies.
class PgLock final : public Lock {
 public:
  PgLock(std::unique_ptr<Conn> conn, int64_t key) : conn_(std::move(conn)), key_(key) {}
  ~PgLock() override {
    try {
      pqxx::nontransaction w(*conn_->pq);
      w.exec_params("SELECT pg_advisory_unlock($1)", key_);
    } catch (const std::exception&) {
      // Closing the connection below releases it anyway.
    }
  }
  bool Held() override {
    try {
      pqxx::nontransaction w(*conn_->pq);
      w.exec("SELECT 1");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

 private:
  std::unique_ptr<Conn> conn_;
  int64_t key_;
};

// The advisory lock's key for a name: FNV-1a, 64 bits.
int64_t LockKey(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h);
}

class PostgresDatabase final : public Database {
 public:
  PostgresDatabase(std::string url, PostgresOptions options)
      : url_(std::move(url)), pool_size_(std::max(1, options.pool_size)) {}

  // REQUIRES: no Transact/Read call in progress.
  ~PostgresDatabase() override = default;

  // Opens the first connection, so that a wrong URL or an unreachable server fails at
  // start rather than at the first request.
  Status Init() {
    auto c = Acquire();
    if (!c.ok()) return c.status();
    Release(std::move(*c));
    return Status::Ok();
  }

  BackendKind Backend() const override { return BackendKind::kPostgres; }

  Status Transact(const std::function<Status(Tx&)>& fn) override {
    return RunWithRetries<pqxx::transaction<pqxx::serializable, pqxx::read_write>>(fn);
  }

  Status Read(const std::function<Status(Tx&)>& fn) override {
    return RunWithRetries<pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>>(fn);
  }

  Status Ping() override {
    return Read([](Tx& tx) { return tx.Query("SELECT 1").status(); });
  }

  StatusOr<std::unique_ptr<Lock>> TryLock(std::string_view name) override {
    GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<Conn> c, Connect());
    const int64_t key = LockKey(name);
    try {
      pqxx::nontransaction w(*c->pq);
      pqxx::result r = w.exec_params("SELECT pg_try_advisory_lock($1)", key);
      if (!r[0][0].as<bool>()) return std::unique_ptr<Lock>();
    } catch (const std::exception& e) {
      return Unavailable("postgresql: cannot take a lock: " + OneLine(e.what()));
    }
    return std::unique_ptr<Lock>(std::make_unique<PgLock>(std::move(c), key));
  }

 private:
  struct Outcome {
    Status status;
    bool retry = false;
  };

  StatusOr<std::unique_ptr<Conn>> Connect() {
    auto c = std::make_unique<Conn>();
    try {
      c->pq = std::make_unique<pqxx::connection>(url_);
      c->notices = std::make_unique<NoticeLogger>(*c->pq);
      // A URL that names its own application_name keeps it.
      if (url_.find("application_name") == std::string::npos) {
        c->pq->set_variable("application_name", "'gpunexd'");
      }
      // NOTICEs ("relation already exists, skipping") are noise in our logs.
      c->pq->set_variable("client_min_messages", "warning");
    } catch (const std::exception& e) {
      // The URL is left out of the message: it may hold a password.
      return Unavailable("postgresql: cannot connect: " + OneLine(e.what()));
    }
    return c;
  }

  // Takes an idle connection, or opens one while fewer than pool_size are open; waits
  // otherwise.
  StatusOr<std::unique_ptr<Conn>> Acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !idle_.empty() || open_ < pool_size_; });
    if (!idle_.empty()) {
      std::unique_ptr<Conn> c = std::move(idle_.back());
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

  void Release(std::unique_ptr<Conn> c) {
    bool keep = !c->broken && c->pq->is_open();
    if (!keep) c.reset();  // closes outside the lock
    std::lock_guard g(mu_);
    if (keep) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
    cv_.notify_one();
  }

  template <typename Work>
  Status RunWithRetries(const std::function<Status(Tx&)>& fn) {
    // Seeded without std::random_device, which may throw.
    static thread_local std::mt19937 rng{
        static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                              std::hash<std::thread::id>()(std::this_thread::get_id()))};
    Status last;
    for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
      if (attempt > 0) {
        // Full jitter over an exponentially growing window: 2 ms, 4 ms, ... 50 ms.
        auto window = std::min<std::chrono::microseconds>(
            kMaxBackoff, std::chrono::microseconds(int64_t{1000} << std::min(attempt, 10)));
        std::this_thread::sleep_for(std::chrono::microseconds(
            std::uniform_int_distribution<int64_t>(0, window.count())(rng)));
      }
      auto c = Acquire();
      if (!c.ok()) return c.status();
      Outcome out = RunOnce<Work>(**c, fn);
      Release(std::move(*c));
      if (!out.retry) return out.status;
      last = out.status;
    }
    if (last.code() != StatusCode::kAborted) return last;
    return Aborted("postgresql: the transaction conflicted " + std::to_string(kMaxAttempts) +
                   " times in a row; last: " + last.message());
  }

  template <typename Work>
  static Outcome RunOnce(Conn& c, const std::function<Status(Tx&)>& fn) {
    std::optional<Work> work;
    try {
      work.emplace(*c.pq);
    } catch (...) {
      Failure f = ClassifyCurrentException(*c.pq);
      c.broken = c.broken || f.broken;
      return {f.status, f.retryable};
    }

    PgTx tx(*work, *c.pq);
    Status st;
    try {
      st = fn(tx);
    } catch (const std::exception& e) {
      st = Internal(std::string("transaction callback threw: ") + e.what());
    } catch (...) {
      st = Internal("transaction callback threw an unknown exception");
    }
    const Failure& failed = tx.failure();
    c.broken = c.broken || failed.broken;

    if (!st.ok() || !failed.status.ok()) {
      try {
        work->abort();
      } catch (...) {
        c.broken = c.broken || ClassifyCurrentException(*c.pq).broken;
      }
      // A conflict inside the transaction makes it retryable whatever the callback made
      // of the error (migrations, for one, wrap it).
      if (failed.retryable) return {failed.status, true};
      if (st.code() == StatusCode::kAborted) return {st, true};
      // The callback swallowed a failed statement: the transaction cannot commit.
      return {st.ok() ? failed.status : st, false};
    }

    try {
      work->commit();
    } catch (...) {
      Failure f = ClassifyCurrentException(*c.pq);
      c.broken = c.broken || f.broken;
      // A commit interrupted by a lost connection may have been applied: no retry.
      if (f.broken && f.status.code() == StatusCode::kUnavailable) {
        return {OutcomeUnknown("postgresql: the connection was lost during COMMIT; the transaction "
                               "may or may not have been applied: " +
                               f.status.message()),
                false};
      }
      return {f.status, f.retryable};
    }
    RunAfterCommit(tx.TakeAfterCommit());
    return {Status::Ok(), false};
  }

  const std::string url_;
  const int pool_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Conn>> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;                             // GUARDED_BY(mu_); idle and in use
};

}  // namespace

StatusOr<std::unique_ptr<Database>> OpenPostgresDatabase(const std::string& url,
                                                         PostgresOptions options) {
  auto db = std::make_unique<PostgresDatabase>(url, options);
  GPUNEX_RETURN_IF_ERROR(db->Init());
  return std::unique_ptr<Database>(std::move(db));
}

}  // namespace gpunex::platform::store
