// The store conformance suite: one set of behaviours every Database backend must share,
// instantiated for SQLite (always) and PostgreSQL (when GPUNEX_TEST_PG_URL names a
// server, e.g. from `scripts/pg-test-server.sh start DIR`). Each test gets an empty
// database: a fresh data directory for SQLite, a freshly created database for
// PostgreSQL (dropped afterwards).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "platform/store/db.h"
#include "platform/store/migrations.h"
#include "platform/store/paging.h"
#include "platform/store/rows.h"
#include "platform/store/signals.h"
#include "platform/store/testing/fault_injection.h"
#include "platform/store/testing/test_database.h"

namespace gpunex::platform::store {
namespace {

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto t = testing::TestDatabase::Open(GetParam());
    if (t.status().code() == StatusCode::kFailedPrecondition) GTEST_SKIP() << t.status().message();
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    test_db_ = std::move(*t);
    db_ = &test_db_->db();
  }

  // Runs statements, each in its own transaction; fails the test on the first error.
  void Prepare(const std::vector<std::string>& statements) {
    for (const std::string& sql : statements) {
      Status st = test_db_->Exec(sql);
      ASSERT_TRUE(st.ok()) << sql << ": " << st.ToString();
    }
  }

  StatusOr<Rows> ReadRows(const std::string& sql, const std::vector<Value>& params = {}) {
    return test_db_->Query(sql, params);
  }

  int64_t Count(const std::string& table) {
    auto rows = ReadRows("SELECT COUNT(*) AS n FROM " + table);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? rows->at(0)["n"].Int() : -1;
  }

  std::unique_ptr<testing::TestDatabase> test_db_;
  Database* db_ = nullptr;
};

TEST_P(StoreConformance, ReportsItsBackendAndPings) {
  EXPECT_EQ(BackendName(db_->Backend()), GetParam());
  Status st = db_->Transact([&](Tx& tx) {
    EXPECT_EQ(BackendName(tx.Backend()), GetParam());
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  st = db_->Ping();
  EXPECT_TRUE(st.ok()) << st.ToString();
}

// Two folders' parts in version 1 (as the first releases shipped), a data step in 2.
std::vector<Migration> TestMigrations() {
  return {
      {1,
       "alpha",
       "alpha table",
       {"CREATE TABLE alpha (id TEXT PRIMARY KEY, n BIGINT NOT NULL)"},
       {}},
      {2,
       "alpha",
       "alpha data",
       {"ALTER TABLE alpha ADD COLUMN note TEXT"},
       [](Tx& tx) {
         return tx.Exec("UPDATE alpha SET note = 'migrated' WHERE note IS NULL").status();
       }},
      {1,
       "beta",
       "beta table",
       {"CREATE TABLE beta (id TEXT PRIMARY KEY REFERENCES alpha(id))"},
       {}},
  };
}

// Instances hear a committed transaction's signals at once (store/signals.h): on
// PostgreSQL through LISTEN on a connection of the listener's own; SQLite has no listener.
TEST_P(StoreConformance, ASignalReachesItsListenersWhenItsTransactionCommits) {
  constexpr char kChannel[] = "gpunex_test_signals";
  if (db_->Backend() == BackendKind::kSqlite) {
    EXPECT_EQ(SignalListener::For(*db_, "", kChannel), nullptr);
    Status st = db_->Transact([&](Tx& tx) { return Signal(tx, kChannel, "m1"); });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return;
  }
  // This test's database on the server GPUNEX_TEST_PG_URL names: NOTIFY and LISTEN are
  // per database.
  auto name = ReadRows("SELECT current_database() AS name");
  ASSERT_TRUE(name.ok()) << name.status().ToString();
  std::string url = std::getenv("GPUNEX_TEST_PG_URL");
  url = url.substr(0, url.find('?'));
  url = url.substr(0, url.rfind('/') + 1) + name->at(0)["name"].Str();
  std::unique_ptr<SignalListener> listener = SignalListener::For(*db_, url, kChannel);
  std::unique_ptr<SignalListener> other = SignalListener::For(*db_, url, "gpunex_test_other");
  ASSERT_NE(listener, nullptr);
  ASSERT_NE(other, nullptr);
  for (auto* l : {listener.get(), other.get()}) {  // connects and listens: nothing yet
    auto none = l->Wait(std::chrono::milliseconds(10));
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_TRUE(none->empty());
  }
  Status st = db_->Transact([&](Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(Signal(tx, kChannel, "rolled back"));
    return FailedPrecondition("the transaction rolls back");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  st = db_->Transact([&](Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(Signal(tx, kChannel, "m1"));
    GPUNEX_RETURN_IF_ERROR(Signal(tx, kChannel, "m2"));
    return Signal(tx, kChannel, "m1");  // the same again: heard once
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<std::string> heard;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (heard.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    auto got = listener->Wait(std::chrono::milliseconds(200));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    heard.insert(heard.end(), got->begin(), got->end());
  }
  EXPECT_EQ(heard, (std::vector<std::string>{"m1", "m2"}));
  auto more = listener->Wait(std::chrono::milliseconds(100));
  ASSERT_TRUE(more.ok());
  EXPECT_TRUE(more->empty()) << (*more)[0];
  auto elsewhere = other->Wait(std::chrono::milliseconds(100));
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_TRUE(elsewhere->empty()) << "another channel's listener hears nothing";
  // A listener whose connection is cut says so, then listens again on a new one.
  auto cut = ReadRows(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = "
      "current_database() AND query LIKE 'LISTEN%gpunex_test_signals%'");
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  ASSERT_EQ(cut->size(), 1u);
  bool said = false;
  for (int i = 0; i < 25 && !said; ++i) {
    auto got = listener->Wait(std::chrono::milliseconds(200));
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().ToString();
      said = true;
    }
  }
  EXPECT_TRUE(said) << "a cut connection is reported";
  auto again = listener->Wait(std::chrono::milliseconds(10));  // listens anew
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  st = db_->Transact([&](Tx& tx) { return Signal(tx, kChannel, "m3"); });
  ASSERT_TRUE(st.ok()) << st.ToString();
  heard.clear();
  for (int i = 0; i < 25 && heard.empty(); ++i) {
    auto got = listener->Wait(std::chrono::milliseconds(200));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    heard = *got;
  }
  EXPECT_EQ(heard, std::vector<std::string>{"m3"});
  // A payload too long for NOTIFY is refused before it is sent.
  st = db_->Transact([&](Tx& tx) { return Signal(tx, kChannel, std::string(7001, 'x')); });
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformance, ALockIsHeldByOneHolderAtATime) {
  auto first = db_->TryLock("payouts.run");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_NE(*first, nullptr);
  EXPECT_TRUE((*first)->Held());
  auto second = db_->TryLock("payouts.run");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, nullptr);  // taken
  auto other = db_->TryLock("another.lock");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, nullptr);  // names are independent
  first->reset();              // released
  auto again = db_->TryLock("payouts.run");
  ASSERT_TRUE(again.ok());
  EXPECT_NE(*again, nullptr);
  // Transactions go on while a lock is held (a PostgreSQL lock has its own connection).
  EXPECT_TRUE(db_->Ping().ok());
}

TEST_P(StoreConformance, MigrateBringsEmptyDatabaseToLatestAndIsIdempotent) {
  auto before = CurrentSchemaVersion(*db_);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(*before, 0);

  Status st = Migrate(*db_, TestMigrations());
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto version = CurrentSchemaVersion(*db_);
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, 2);
  EXPECT_EQ(LatestVersion(TestMigrations()), 2);
  EXPECT_EQ(Count("schema_migrations"), 2);  // one row per version, not per part
  EXPECT_EQ(Count("beta"), 0);

  st = Migrate(*db_, TestMigrations());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(*CurrentSchemaVersion(*db_), 2);
  EXPECT_EQ(Count("schema_migrations"), 2);
}

TEST_P(StoreConformance, MigrateUpgradesInPlaceAndRefusesANewerSchema) {
  auto first = TestMigrations();
  first.erase(first.begin() + 1);  // the release before version 2
  ASSERT_TRUE(Migrate(*db_, first).ok());
  Prepare({"INSERT INTO alpha (id, n) VALUES ('a', 1)"});
  ASSERT_TRUE(Migrate(*db_, TestMigrations()).ok());
  auto rows = ReadRows("SELECT note FROM alpha WHERE id = 'a'");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->at(0)["note"].Str(), "migrated");
  Status st = Migrate(*db_, first);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
}

TEST_P(StoreConformance, AFailedVersionLeavesTheSchemaAtTheVersionBefore) {
  auto migrations = TestMigrations();
  migrations.push_back(
      {3, "beta", "broken", {"ALTER TABLE beta ADD COLUMN x BIGINT", "NOT SQL"}, {}});
  Status st = Migrate(*db_, migrations);
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("migration 3 (beta)"), std::string::npos) << st.message();
  EXPECT_EQ(*CurrentSchemaVersion(*db_), 2);
  // Column x was rolled back with the rest of version 3.
  EXPECT_FALSE(ReadRows("SELECT x FROM beta").ok());
}

TEST_P(StoreConformance, AfterCommitRunsOnceOnlyForCommittedTransactions) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY)"});
  std::vector<std::string> ran;
  Status st = db_->Transact([&](Tx& tx) -> Status {
    tx.AfterCommit([&] { ran.push_back("first"); });
    tx.AfterCommit([&] { ran.push_back("second"); });
    // Not yet: the transaction is still open.
    EXPECT_TRUE(ran.empty());
    return tx.Exec("INSERT INTO items (id) VALUES ('a')").status();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "second"}));

  ran.clear();
  st = db_->Transact([&](Tx& tx) -> Status {
    tx.AfterCommit([&] { ran.push_back("rolled back"); });
    return FailedPrecondition("no");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  st = db_->Transact([&](Tx& tx) -> Status {
    tx.AfterCommit([&] { ran.push_back("duplicate"); });
    return tx.Exec("INSERT INTO items (id) VALUES ('a')").status();
  });
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(ran.empty());

  // A retried attempt's registrations go with it: one run for the attempt that committed.
  testing::FaultInjectingDatabase faulty(*db_);
  faulty.FailStatement("INSERT INTO items", Aborted("injected conflict"), 2);
  int attempts = 0;
  st = faulty.Transact([&](Tx& tx) -> Status {
    ++attempts;
    tx.AfterCommit([&] { ran.push_back("attempt " + std::to_string(attempts)); });
    return tx.Exec("INSERT INTO items (id) VALUES ('b')").status();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(ran, (std::vector<std::string>{"attempt 3"}));
  EXPECT_EQ(Count("items"), 2);
}

TEST_P(StoreConformance, FaultInjectionFailsStatementsAndCommits) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY)"});
  testing::FaultInjectingDatabase faulty(*db_);
  faulty.FailStatement("INSERT INTO items", Unavailable("injected outage"));
  Status st = faulty.Transact(
      [](Tx& tx) { return tx.Exec("INSERT INTO items (id) VALUES ('a')").status(); });
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(Count("items"), 0);

  bool ran = false;
  faulty.FailCommit("INSERT INTO items", /*committed=*/true);
  st = faulty.Transact([&](Tx& tx) {
    tx.AfterCommit([&] { ran = true; });
    return tx.Exec("INSERT INTO items (id) VALUES ('a')").status();
  });
  EXPECT_EQ(st.code(), StatusCode::kOutcomeUnknown) << st.ToString();
  EXPECT_EQ(Count("items"), 1) << "it did commit";
  EXPECT_FALSE(ran);

  faulty.FailCommit("INSERT INTO items", /*committed=*/false);
  st = faulty.Transact(
      [&](Tx& tx) { return tx.Exec("INSERT INTO items (id) VALUES ('b')").status(); });
  EXPECT_EQ(st.code(), StatusCode::kOutcomeUnknown) << st.ToString();
  EXPECT_EQ(Count("items"), 1) << "it did not commit";
  EXPECT_EQ(faulty.injected(), 3);
  EXPECT_EQ(faulty.Count("INSERT INTO items"), 3);

  // Faults are spent: the same writes now go through.
  st = faulty.Transact(
      [&](Tx& tx) { return tx.Exec("INSERT INTO items (id) VALUES ('b')").status(); });
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST_P(StoreConformance, QueryPageWalksAKeysetInBothDirections) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY, at BIGINT NOT NULL, owner TEXT NOT NULL)"});
  // Ten rows, two per `at` value, so that the key needs both columns.
  Status st = db_->Transact([&](Tx& tx) -> Status {
    for (int i = 0; i < 10; ++i) {
      GPUNEX_RETURN_IF_ERROR(
          tx.Exec("INSERT INTO items (id, at, owner) VALUES (?, ?, ?)",
                  {"i" + std::to_string(i), int64_t{i / 2}, std::string(i == 7 ? "other" : "me")})
              .status());
    }
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (bool descending : {false, true}) {
    SCOPED_TRACE(descending ? "descending" : "ascending");
    PageQuery q{"id",
                "FROM items",
                "owner = ?",
                {std::string("me")},
                {{"at", KeyColumn::Type::kInt}, {"id", KeyColumn::Type::kText}},
                descending};
    std::vector<std::string> seen;
    PageRequest req{4, std::nullopt};
    int pages = 0;
    while (true) {
      Page<Row> page;
      st = db_->Read([&](Tx& tx) -> Status {
        GPUNEX_ASSIGN_OR_RETURN(page, QueryPage(tx, q, req));
        return Status::Ok();
      });
      ASSERT_TRUE(st.ok()) << st.ToString();
      ++pages;
      for (const Row& r : page.items) seen.push_back(r["id"].Str());
      if (!page.next) break;
      // The cursor survives its text form.
      req.after = *Cursor::Decode(page.next->Encode());
    }
    std::vector<std::string> want = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i8", "i9"};
    if (descending) std::reverse(want.begin(), want.end());
    EXPECT_EQ(seen, want);
    EXPECT_EQ(pages, 3);
  }
  // A page that ends exactly at the last row has no next cursor.
  Page<Row> all;
  st = db_->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(
        all, QueryPage(tx, {"id", "FROM items", "", {}, {{"id", KeyColumn::Type::kText}}},
                       PageRequest{10, std::nullopt}));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(all.items.size(), 10u);
  EXPECT_FALSE(all.next);
  // A cursor of another list's shape is refused naming "cursor".
  st = db_->Read([&](Tx& tx) -> Status {
    return QueryPage(tx, {"id", "FROM items", "", {}, {{"id", KeyColumn::Type::kText}}},
                     PageRequest{10, Cursor({int64_t{3}})})
        .status();
  });
  EXPECT_EQ(st.code(), StatusCode::kValidationFailed);
  EXPECT_EQ(st.fields().count("cursor"), 1u);
}

TEST_P(StoreConformance, RoundTripsEveryValueType) {
  Prepare({"CREATE TABLE vals (id BIGINT PRIMARY KEY, i BIGINT, d DOUBLE PRECISION, s TEXT)"});
  const int64_t kBig = int64_t{1} << 62;
  struct Case {
    Value i, d, s;
  };
  const std::vector<Case> cases = {
      {int64_t{0}, 0.0, std::string()},
      {int64_t{1}, 0.5, std::string("plain")},
      {int64_t{-1}, -1.25,
       std::string("h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93 \xE6\x97\xA5\xE6\x9C\xAC "
                   "\xF0\x9F\x9A\x80")},
      {kBig, 1e300, std::string("it's \"quoted\" and has a ? mark")},
      {-kBig, -2.5e-300, std::string("line\nbreak\ttab \\ backslash")},
      {std::numeric_limits<int64_t>::max(), 0.1, std::string(1000, 'x')},
      {std::numeric_limits<int64_t>::min(), 123456789.125, std::string(" ")},
      {nullptr, nullptr, nullptr},
  };
  Status st = db_->Transact([&](Tx& tx) -> Status {
    for (size_t k = 0; k < cases.size(); ++k) {
      GPUNEX_ASSIGN_OR_RETURN(
          int64_t n, tx.Exec("INSERT INTO vals (id, i, d, s) VALUES (?, ?, ?, ?)",
                             {static_cast<int64_t>(k), cases[k].i, cases[k].d, cases[k].s}));
      if (n != 1) return Internal("inserted " + std::to_string(n) + " rows");
    }
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();

  auto rows = ReadRows("SELECT id, i, d, s FROM vals ORDER BY id");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), cases.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    SCOPED_TRACE("row " + std::to_string(k));
    const Row& r = (*rows)[k];
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r["id"].Int(), static_cast<int64_t>(k));
    // Exact cell types: BIGINT reads as int64, DOUBLE PRECISION as double, TEXT as text.
    EXPECT_EQ(r["i"].value(), cases[k].i);
    EXPECT_EQ(r["d"].value(), cases[k].d);
    EXPECT_EQ(r["s"].value(), cases[k].s);
  }
  EXPECT_TRUE((*rows)[7]["i"].IsNull());
  EXPECT_FALSE((*rows)[7]["s"].OptStr().has_value());
  EXPECT_EQ((*rows)[3]["i"].Int(), kBig);
  EXPECT_EQ((*rows)[4]["i"].Int(), -kBig);

  // Parameters in WHERE clauses compare with the stored values exactly.
  rows = ReadRows("SELECT id FROM vals WHERE i = ? AND d = ? AND s = ?",
                  {cases[2].i, cases[2].d, cases[2].s});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0]["id"].Int(), 2);
  rows = ReadRows("SELECT COUNT(*) AS n FROM vals WHERE i IS NULL AND d IS NULL AND s IS NULL");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0]["n"].Int(), 1);
}

TEST_P(StoreConformance, ReturningGivesTheWrittenRows) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 7)"});
  Rows inserted, updated;
  Status st = db_->Transact([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(inserted, tx.Query("INSERT INTO items (id) VALUES (?), (?) "
                                               "RETURNING id, n",
                                               {std::string("a"), std::string("b")}));
    GPUNEX_ASSIGN_OR_RETURN(updated, tx.Query("UPDATE items SET n = n + ? WHERE id = ? RETURNING n",
                                              {int64_t{5}, std::string("b")}));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(inserted.size(), 2u);
  std::map<std::string, int64_t> got;
  for (const Row& r : inserted) got[r["id"].Str()] = r["n"].Int();
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{"a", 7}, {"b", 7}}));
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_EQ(updated[0]["n"].Int(), 12);
}

TEST_P(StoreConformance, OnConflictDoNothingSkipsTheRow) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY, note TEXT NOT NULL)"});
  int64_t first = -1, second = -1;
  Rows returned;
  Status st = db_->Transact([&](Tx& tx) -> Status {
    const char* sql = "INSERT INTO items (id, note) VALUES (?, ?) ON CONFLICT (id) DO NOTHING";
    GPUNEX_ASSIGN_OR_RETURN(first, tx.Exec(sql, {std::string("k"), std::string("first")}));
    GPUNEX_ASSIGN_OR_RETURN(second, tx.Exec(sql, {std::string("k"), std::string("second")}));
    GPUNEX_ASSIGN_OR_RETURN(returned, tx.Query("INSERT INTO items (id, note) VALUES (?, "
                                               "?) ON CONFLICT DO NOTHING RETURNING id",
                                               {std::string("k"), std::string("third")}));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
  EXPECT_TRUE(returned.empty());
  auto rows = ReadRows("SELECT note FROM items WHERE id = ?", {std::string("k")});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0]["note"].Str(), "first");
}

TEST_P(StoreConformance, UniqueViolationIsAlreadyExistsAndRollsBack) {
  Prepare({"CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE)",
           "INSERT INTO users (id, email) VALUES ('u1', 'a@example.com')"});
  Status seen;
  Status st = db_->Transact([&](Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO users (id, email) VALUES (?, ?)",
                                   {std::string("u2"), std::string("b@example.com")})
                               .status());
    seen = tx.Exec("INSERT INTO users (id, email) VALUES (?, ?)",
                   {std::string("u3"), std::string("a@example.com")})
               .status();
    return seen;
  });
  EXPECT_EQ(seen.code(), StatusCode::kAlreadyExists) << seen.ToString();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.ToString();
  EXPECT_EQ(Count("users"), 1);  // u2, written before the violation, was rolled back

  // The pool's connection is usable again afterwards.
  st = db_->Transact([&](Tx& tx) {
    return tx.Exec("INSERT INTO users (id, email) VALUES ('u2', 'b@example.com')").status();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Count("users"), 2);
}

TEST_P(StoreConformance, CallbackErrorRollsBack) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY)"});
  int calls = 0;
  Status st = db_->Transact([&](Tx& tx) -> Status {
    ++calls;
    GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO items (id) VALUES ('x')").status());
    return FailedPrecondition("changed my mind");
  });
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "changed my mind");
  EXPECT_EQ(calls, 1);  // not a conflict: not retried
  EXPECT_EQ(Count("items"), 0);
}

TEST_P(StoreConformance, CommittedWriteIsVisibleToLaterRead) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)"});
  Status st = db_->Transact([&](Tx& tx) {
    return tx.Exec("INSERT INTO items (id, n) VALUES (?, ?)", {std::string("a"), int64_t{42}})
        .status();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto rows = ReadRows("SELECT n FROM items WHERE id = ?", {std::string("a")});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0]["n"].Int(), 42);

  // And Exec counts the rows a statement changed.
  int64_t changed = -1;
  st = db_->Transact([&](Tx& tx) -> Status {
    GPUNEX_RETURN_IF_ERROR(tx.Exec("INSERT INTO items (id, n) VALUES ('b', 1), ('c', 1)").status());
    GPUNEX_ASSIGN_OR_RETURN(changed, tx.Exec("UPDATE items SET n = n + 1"));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(changed, 3);
}

TEST_P(StoreConformance, ReadSeesOneSnapshot) {
  Prepare({"CREATE TABLE items (id TEXT PRIMARY KEY)", "INSERT INTO items (id) VALUES ('a')"});
  int64_t first = -1, second = -1;
  Status st = db_->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Rows r1, tx.Query("SELECT COUNT(*) AS n FROM items"));
    first = r1.at(0)["n"].Int();
    // Another transaction (on another pooled connection) commits meanwhile.
    Status w = db_->Transact(
        [](Tx& other) { return other.Exec("INSERT INTO items (id) VALUES ('b')").status(); });
    if (!w.ok()) return w;
    GPUNEX_ASSIGN_OR_RETURN(Rows r2, tx.Query("SELECT COUNT(*) AS n FROM items"));
    second = r2.at(0)["n"].Int();
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(Count("items"), 2);
}

TEST_P(StoreConformance, ConcurrentIncrementsAreSerialised) {
  Prepare({"CREATE TABLE counters (id TEXT PRIMARY KEY, n BIGINT NOT NULL)",
           "INSERT INTO counters (id, n) VALUES ('c', 0)"});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 25;
  std::atomic<int> failures{0};
  std::atomic<int> attempts{0};
  std::atomic<int> most_attempts{0};  // of one Transact call
  Mutex mu;
  Status first_failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < kPerThread; ++k) {
        // Read-modify-write: without serialisation two transactions would read the same
        // value and one increment would be lost.
        int tries = 0;
        Status st = db_->Transact([&](Tx& tx) -> Status {
          attempts++;
          tries++;
          GPUNEX_ASSIGN_OR_RETURN(Rows r, tx.Query("SELECT n FROM counters WHERE id = 'c'"));
          return tx.Exec("UPDATE counters SET n = ? WHERE id = 'c'", {r.at(0)["n"].Int() + 1})
              .status();
        });
        int most = most_attempts.load();
        while (tries > most && !most_attempts.compare_exchange_weak(most, tries)) {
        }
        if (!st.ok()) {
          failures++;
          MutexLock g(&mu);
          if (first_failure.ok()) first_failure = st;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << first_failure.ToString();
  auto rows = ReadRows("SELECT n FROM counters WHERE id = 'c'");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ((*rows)[0]["n"].Int(), kThreads * kPerThread);
  RecordProperty("attempts", attempts.load());
  RecordProperty("most_attempts", most_attempts.load());
}

TEST_P(StoreConformance, PlaceholderInsideStringLiteralIsText) {
  Prepare({"CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)"});
  Status st = db_->Transact([&](Tx& tx) {
    return tx.Exec("INSERT INTO notes (id, body) VALUES (?, 'is it ''?'' or \"?\"')", {int64_t{7}})
        .status();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto rows = ReadRows("SELECT body FROM notes WHERE id = ? AND body <> '?'", {int64_t{7}});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0]["body"].Str(), "is it '?' or \"?\"");
}

// A record of every field type a RowMapper converts by itself, read from both backends.
struct Typed {
  std::string id;
  int64_t big = 0;
  int small = 0;
  bool flag = false;
  double ratio = 0;
  Timestamp at;
  Usdc amount;
  std::optional<std::string> note;
  std::optional<int64_t> count;
  std::optional<Timestamp> ended_at;
  std::optional<Usdc> cap;
  std::string owner_name;
  std::string upper;
};

const RowMapper<Typed>& TypedRows() {
  static const auto* const m = new RowMapper<Typed>({
      {"id", &Typed::id},
      {"big", &Typed::big},
      {"small", &Typed::small},
      {"flag", &Typed::flag},
      {"ratio", &Typed::ratio},
      {"at", &Typed::at},
      {"amount", &Typed::amount},
      {"note", &Typed::note},
      {"count", &Typed::count},
      {"ended_at", &Typed::ended_at},
      {"cap", &Typed::cap},
      {"owner_name", &Typed::owner_name, "o.name"},
      {"upper", [](Typed& t, const Cell& c) { t.upper = "<" + c.Str() + ">"; }, "UPPER(t.id)"},
  });
  return *m;
}

TEST_P(StoreConformance, RowMapperBindsColumnsByNameOnBothBackends) {
  Prepare({"CREATE TABLE owners (id TEXT PRIMARY KEY, name TEXT NOT NULL)",
           "CREATE TABLE typed (id TEXT PRIMARY KEY, owner TEXT NOT NULL, big BIGINT NOT NULL, "
           "small BIGINT NOT NULL, flag BIGINT NOT NULL, ratio DOUBLE PRECISION NOT NULL, "
           "at BIGINT NOT NULL, amount BIGINT NOT NULL, note TEXT, count BIGINT, ended_at BIGINT, "
           "cap BIGINT)",
           "INSERT INTO owners (id, name) VALUES ('o1', 'Ada')",
           "INSERT INTO typed VALUES ('a', 'o1', 9007199254740993, 7, 1, 0.25, 1700000000000001, "
           "1500000, 'hi', 3, 1700000000000002, 2000000)",
           "INSERT INTO typed VALUES ('b', 'o1', -1, 0, 0, 2, 0, 0, NULL, NULL, NULL, NULL)"});
  const std::string select = TypedRows().Select("t");
  EXPECT_EQ(select,
            "t.id, t.big, t.small, t.flag, t.ratio, t.at, t.amount, t.note, t.count, t.ended_at, "
            "t.cap, o.name AS owner_name, UPPER(t.id) AS upper");
  auto rows =
      ReadRows("SELECT " + select + " FROM typed t JOIN owners o ON o.id = t.owner ORDER BY t.id");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  auto got = TypedRows().Decode(*rows);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  const Typed& a = (*got)[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.big, 9007199254740993);
  EXPECT_EQ(a.small, 7);
  EXPECT_TRUE(a.flag);
  EXPECT_DOUBLE_EQ(a.ratio, 0.25);
  EXPECT_EQ(a.at, FromUnixMicros(1700000000000001));
  EXPECT_EQ(a.amount, Usdc::Micros(1500000));
  EXPECT_EQ(a.note, "hi");
  EXPECT_EQ(a.count, 3);
  EXPECT_EQ(a.ended_at, FromUnixMicros(1700000000000002));
  EXPECT_EQ(a.cap, Usdc::Micros(2000000));
  EXPECT_EQ(a.owner_name, "Ada");
  EXPECT_EQ(a.upper, "<A>");
  const Typed& b = (*got)[1];
  EXPECT_EQ(b.big, -1);
  EXPECT_FALSE(b.flag);
  EXPECT_DOUBLE_EQ(b.ratio, 2);
  EXPECT_FALSE(b.note.has_value());
  EXPECT_FALSE(b.count.has_value());
  EXPECT_FALSE(b.ended_at.has_value());
  EXPECT_FALSE(b.cap.has_value());

  // A page of rows decodes the same way: the key columns QueryPage adds do not collide
  // with the record's own `id`.
  PageQuery q{select,
              "FROM typed t JOIN owners o ON o.id = t.owner",
              "",
              {},
              {{"t.id", KeyColumn::Type::kText}},
              false};
  Page<Typed> page;
  Status st = db_->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(Page<Row> rows, QueryPage(tx, q, PageRequest{1, std::nullopt}));
    GPUNEX_ASSIGN_OR_RETURN(page, TypedRows().DecodePage(rows));
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0].id, "a");
  EXPECT_TRUE(page.next.has_value());

  // A declared column the query did not select is a bug in the query, named.
  rows = ReadRows("SELECT t.id, t.big FROM typed t");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  got = TypedRows().Decode(*rows);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  EXPECT_NE(got.status().message().find("small"), std::string::npos) << got.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace gpunex::platform::store
