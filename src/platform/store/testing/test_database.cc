#include "platform/store/testing/test_database.h"

#include <cstdlib>
#include <map>
#include <pqxx/pqxx>
#include <random>

#include "common/thread_annotations.h"

namespace gpunex::platform::store::testing {
namespace {

std::string RandomSuffix() {
  static Mutex mu;
  static std::mt19937_64 rng GUARDED_BY(mu){std::random_device{}()};
  MutexLock lock(&mu);
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 12; ++i) s += kHex[rng() % 16];
  return s;
}

// `url` with its database name replaced by `dbname`.
std::string WithDatabase(const std::string& url, const std::string& dbname) {
  size_t authority = url.find("://");
  authority = authority == std::string::npos ? 0 : authority + 3;
  const size_t query = url.find('?', authority);
  size_t slash = url.find('/', authority);
  const std::string suffix = query == std::string::npos ? "" : url.substr(query);
  if (slash == std::string::npos || (query != std::string::npos && slash > query)) {
    slash = query == std::string::npos ? url.size() : query;
  }
  return url.substr(0, slash) + "/" + dbname + suffix;
}

// Runs one statement outside a transaction block (CREATE/DROP DATABASE refuse to run
// inside one, so this cannot go through Database).
Status AdminExec(const std::string& url, const std::string& sql) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction work(conn);
    work.exec(sql);
    return Status::Ok();
  } catch (const std::exception& e) {
    return Internal(e.what());
  }
}

std::string PgUrl() {
  const char* url = std::getenv("GPUNEX_TEST_PG_URL");
  return url ? url : "";
}

// What tells two sets of migrations apart: each version with its name and statements.
std::string MigrationsKey(const std::vector<Migration>& migrations) {
  std::string key;
  for (const Migration& m : migrations) {
    key += std::to_string(m.version) + "\x1f" + m.name + "\x1f";
    for (const std::string& st : m.statements) key += st + "\x1e";
  }
  return key;
}

// This process's migrated PostgreSQL templates, one per set of migrations, on the
// server of GPUNEX_TEST_PG_URL; dropped when the process exits.
class Templates {
 public:
  static Templates& Get() {
    static Templates* t = new Templates();  // never destroyed: exit drops through atexit
    return *t;
  }

  // The name of the template at `migrations`, made on first use.
  StatusOr<std::string> For(const std::string& admin_url,
                            const std::vector<Migration>& migrations) {
    MutexLock lock(&mu_);
    const std::string key = MigrationsKey(migrations);
    if (auto it = names_.find(key); it != names_.end()) return it->second;
    const std::string name = "gpunex_tmpl_" + RandomSuffix();
    GPUNEX_RETURN_IF_ERROR(AdminExec(admin_url, "CREATE DATABASE " + name));
    {
      // Closed before it is copied: PostgreSQL copies no database others are connected to.
      GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<Database> db,
                              OpenPostgresDatabase(WithDatabase(admin_url, name)));
      if (Status st = Migrate(*db, migrations); !st.ok()) {
        db.reset();
        (void)AdminExec(admin_url, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        return st;
      }
    }
    if (names_.empty()) {
      admin_url_ = admin_url;
      std::atexit([] { Get().DropAll(); });
    }
    names_.emplace(key, name);
    return name;
  }

 private:
  void DropAll() {
    MutexLock lock(&mu_);
    for (const auto& [key, name] : names_) {
      (void)AdminExec(admin_url_, "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    }
    names_.clear();
  }

  Mutex mu_;
  std::map<std::string, std::string> names_ GUARDED_BY(mu_);  // key → database name
  std::string admin_url_ GUARDED_BY(mu_);
};

}  // namespace

std::vector<std::string> TestBackends() {
  std::vector<std::string> b{"sqlite"};
  if (!PgUrl().empty()) b.push_back("postgresql");
  return b;
}

StatusOr<std::unique_ptr<TestDatabase>> TestDatabase::Open(const std::string& backend) {
  std::unique_ptr<TestDatabase> t(new TestDatabase());
  if (backend == "sqlite") {
    t->dir_ = std::filesystem::temp_directory_path() / ("gpunex_test_" + RandomSuffix());
    GPUNEX_ASSIGN_OR_RETURN(t->db_, OpenSqliteDatabase(t->dir_.string()));
    return t;
  }
  if (backend != "postgresql") return InvalidArgument("no such backend: " + backend);
  t->admin_url_ = PgUrl();
  if (t->admin_url_.empty()) {
    return FailedPrecondition(
        "GPUNEX_TEST_PG_URL is not set, so the PostgreSQL backend is not tested; start a server "
        "with `scripts/pg-test-server.sh start DIR` and set the variable to the URL it prints");
  }
  t->dbname_ = "gpunex_t_" + RandomSuffix();
  GPUNEX_RETURN_IF_ERROR(AdminExec(t->admin_url_, "CREATE DATABASE " + t->dbname_));
  GPUNEX_ASSIGN_OR_RETURN(t->db_, OpenPostgresDatabase(WithDatabase(t->admin_url_, t->dbname_)));
  return t;
}

StatusOr<std::unique_ptr<TestDatabase>> TestDatabase::OpenMigrated(
    const std::string& backend, const std::vector<Migration>& migrations) {
  if (backend != "postgresql" || PgUrl().empty()) {
    GPUNEX_ASSIGN_OR_RETURN(std::unique_ptr<TestDatabase> t, Open(backend));
    GPUNEX_RETURN_IF_ERROR(t->Migrate(migrations));
    return t;
  }
  std::unique_ptr<TestDatabase> t(new TestDatabase());
  t->admin_url_ = PgUrl();
  GPUNEX_ASSIGN_OR_RETURN(std::string source, Templates::Get().For(t->admin_url_, migrations));
  t->dbname_ = "gpunex_t_" + RandomSuffix();
  GPUNEX_RETURN_IF_ERROR(
      AdminExec(t->admin_url_, "CREATE DATABASE " + t->dbname_ + " TEMPLATE " + source));
  GPUNEX_ASSIGN_OR_RETURN(t->db_, OpenPostgresDatabase(WithDatabase(t->admin_url_, t->dbname_)));
  // Nothing left to apply; checks that the copy is at the template's version.
  GPUNEX_RETURN_IF_ERROR(t->Migrate(migrations));
  return t;
}

TestDatabase::~TestDatabase() {
  db_.reset();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  if (!dbname_.empty()) {
    (void)AdminExec(admin_url_, "DROP DATABASE IF EXISTS " + dbname_ + " WITH (FORCE)");
  }
}

StatusOr<Rows> TestDatabase::Query(const std::string& sql, const std::vector<Value>& params) {
  Rows rows;
  GPUNEX_RETURN_IF_ERROR(db_->Read([&](Tx& tx) -> Status {
    GPUNEX_ASSIGN_OR_RETURN(rows, tx.Query(sql, params));
    return Status::Ok();
  }));
  return rows;
}

Status TestDatabase::Exec(const std::string& sql, const std::vector<Value>& params) {
  return db_->Transact([&](Tx& tx) { return tx.Exec(sql, params).status(); });
}

}  // namespace gpunex::platform::store::testing
