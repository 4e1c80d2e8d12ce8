#include "platform/accounts/accounts.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/ids.h"
#include "platform/store/migrations.h"

namespace gpunex::platform::accounts {
namespace {

class AccountsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / NewId("acct_test");
    db_ = store::OpenSqliteDatabase(dir_.string()).value();
    ASSERT_TRUE(store::Migrate(*db_).ok());
    AccountsOptions o;
    o.argon2_opslimit = 1;
    o.argon2_memlimit_bytes = 8192;
    o.login_max_failures = 3;
    accounts_ = std::make_unique<Accounts>(*db_, o);
  }
  void TearDown() override {
    accounts_.reset();
    db_.reset();
    std::filesystem::remove_all(dir_);
  }
  json::value J(const char* s) { return ParseJson(s).value(); }
  int64_t Count(const std::string& sql) {
    int64_t n = -1;
    EXPECT_TRUE(db_->Read([&](store::Tx& tx) -> Status {
                     GPUNEX_ASSIGN_OR_RETURN(store::Rows r, tx.Query(sql));
                     n = r[0].Int(0);
                     return Status::Ok();
                   }).ok());
    return n;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Database> db_;
  std::unique_ptr<Accounts> accounts_;
};

TEST_F(AccountsTest, SignUpValidatesAndStoresOnlyAHash) {
  auto bad = accounts_->SignUp(J(R"({"email": "x@", "password": "short", "name": ""})"), "1.2.3.4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().fields().size(), 3u);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM users"), 0);

  auto u = accounts_->SignUp(J(R"({"email": "Ana@Example.com", "password": "correct horse", "name": "Ana"})"), "");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->email, "ana@example.com");
  EXPECT_EQ(u->roles, std::vector<std::string>{"customer"});
  EXPECT_EQ(Count("SELECT COUNT(*) FROM users WHERE password_hash LIKE '$argon2id$%'"), 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM users WHERE password_hash LIKE '%correct horse%'"), 0);

  auto dup = accounts_->SignUp(J(R"({"email": "ana@example.com", "password": "0123456789", "name": "B"})"), "");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(dup.status().fields().count("email"));
}

TEST_F(AccountsTest, LoginSessionsAndThrottling) {
  ASSERT_TRUE(accounts_->SignUp(J(R"({"email": "b@example.com", "password": "0123456789", "name": "B"})"), "").ok());
  auto wrong = accounts_->Login(J(R"({"email": "b@example.com", "password": "nope-nope-nope"})"), "ip", "ua");
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated);
  auto unknown = accounts_->Login(J(R"({"email": "zz@example.com", "password": "0123456789"})"), "ip", "ua");
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(unknown.status().message(), wrong.status().message());

  auto ok = accounts_->Login(J(R"({"email": "B@example.com", "password": "0123456789"})"), "ip", "ua");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sessions WHERE token_hash = '" + Sha256Hex(ok->token) + "'"), 1);
  auto p = accounts_->Authenticate(ok->token, false, "ip");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user.email, "b@example.com");
  ASSERT_TRUE(accounts_->Logout(*p).ok());
  EXPECT_EQ(accounts_->Authenticate(ok->token, false, "ip").status().code(),
            StatusCode::kUnauthenticated);

  for (int i = 0; i < 3; ++i) {
    (void)accounts_->Login(J(R"({"email": "b@example.com", "password": "wrong-wrong"})"), "ip", "ua");
  }
  auto locked = accounts_->Login(J(R"({"email": "b@example.com", "password": "0123456789"})"), "ip", "ua");
  EXPECT_EQ(locked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GE(Count("SELECT COUNT(*) FROM audit_events WHERE action = 'login.throttled'"), 1);
}

TEST_F(AccountsTest, ApiKeysAreShownOnceAndRevocable) {
  ASSERT_TRUE(accounts_->SignUp(J(R"({"email": "c@example.com", "password": "0123456789", "name": "C"})"), "").ok());
  auto login = accounts_->Login(J(R"({"email": "c@example.com", "password": "0123456789"})"), "", "");
  auto p = accounts_->Authenticate(login->token, false, "").value();
  auto key = accounts_->CreateApiKey(p, J(R"({"name": "ci"})"));
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM api_keys WHERE token_hash = '" + Sha256Hex(key->second) + "'"), 1);
  auto via_key = accounts_->Authenticate(key->second, false, "");
  ASSERT_TRUE(via_key.ok());
  EXPECT_EQ(via_key->via, Principal::Via::kApiKey);
  // API keys are not accepted as cookies.
  EXPECT_FALSE(accounts_->Authenticate(key->second, true, "").ok());
  EXPECT_EQ(accounts_->ListApiKeys(p)->size(), 1u);
  ASSERT_TRUE(accounts_->RevokeApiKey(p, key->first.id).ok());
  EXPECT_FALSE(accounts_->Authenticate(key->second, false, "").ok());
  EXPECT_EQ(accounts_->RevokeApiKey(p, key->first.id).code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts_->Authenticate("gpx_a_whatever", false, "").status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(AccountsTest, CreateAdminGrantsTheRole) {
  auto admin = accounts_->CreateAdmin("root@example.com", "0123456789", "Root");
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->HasRole(kRoleAdmin));
  EXPECT_TRUE(accounts_->CreateAdmin("root@example.com", "9876543210", "Root").ok());
  EXPECT_TRUE(accounts_->Login(J(R"({"email": "root@example.com", "password": "9876543210"})"), "", "").ok());
}

TEST(CheckEmail, AcceptsCommonRejectsBroken) {
  std::string n;
  EXPECT_EQ(CheckEmail("a.b+c@sub.example.co", &n), "");
  for (const char* bad : {"", "a", "a@", "@b.co", "a@b", "a..b@c.co", "a@-b.co", "a@b.c0", "a b@c.co"}) {
    EXPECT_NE(CheckEmail(bad, &n), "") << bad;
  }
}

}  // namespace
}  // namespace gpunex::platform::accounts
