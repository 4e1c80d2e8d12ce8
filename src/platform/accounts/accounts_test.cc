#include "platform/accounts/accounts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <latch>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "platform/accounts/directory.h"
#include "platform/notify/verify.h"
#include "platform/testing/platform_test.h"

namespace gpunex::platform::accounts {
namespace {

class AccountsTest : public testing::PlatformTest {
 protected:
  void SetUp() override {
    PlatformTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    AccountsOptions o = FastAccountsOptions();
    o.login_max_failures = 3;
    o.login_window_minutes = 15;
    o.session_ttl_hours = 24;
    notify::VerifierOptions vo;
    vo.public_url = "https://gpunex.test";
    vo.clock = &clock_;
    vo.account_email = AccountEmail;
    auto verifier = notify::EmailVerifier::Open(db(), vo);
    ASSERT_TRUE(verifier.ok()) << verifier.status().ToString();
    verifier_ = std::move(*verifier);
    o.verifier = verifier_.get();
    accounts_ = std::make_unique<Accounts>(faulty(), o);
  }

  User SignUp(const std::string& email, const std::string& password = "0123456789") {
    auto u = accounts_->SignUp({email, password, "Someone"}, "10.0.0.1");
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    return u.ok() ? *u : User{};
  }

  Principal LogIn(const std::string& email, const std::string& password = "0123456789") {
    auto login = accounts_->Login({email, password}, "10.0.0.1", "test");
    EXPECT_TRUE(login.ok()) << login.status().ToString();
    auto p = accounts_->Authenticate(login.ok() ? login->token : "", false, "10.0.0.1");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : Principal{};
  }

  std::unique_ptr<notify::EmailVerifier> verifier_;
  std::unique_ptr<Accounts> accounts_;
};

TEST_P(AccountsTest, SignUpValidatesAndStoresOnlyAHash) {
  auto bad = accounts_->SignUp({"x@", "short", ""}, "1.2.3.4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().fields().size(), 3u);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users"), 0);

  auto u = accounts_->SignUp({"Ana@Example.com", "correct horse", "Ana"}, "");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->email, "ana@example.com");
  EXPECT_EQ(u->roles, std::vector<std::string>{"customer"});
  EXPECT_EQ(u->created_at, clock_.Now());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE password_hash LIKE '$argon2id$%'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE password_hash LIKE '%correct horse%'"), 0);

  // The new account's address gets its verification link.
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'email.verify' AND "
                   "to_addr = 'ana@example.com' AND status = 'pending'"),
            1);

  // A taken email gets the same answer, with a user that is never stored; the owner is told.
  auto dup = accounts_->SignUp({"ana@example.com", "0123456789", "B"}, "");
  ASSERT_TRUE(dup.ok()) << dup.status().ToString();
  EXPECT_NE(dup->id, u->id);
  EXPECT_EQ(dup->email, "ana@example.com");
  EXPECT_EQ(dup->roles, u->roles);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE id = '" + dup->id + "'"), 0);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM email_outbox WHERE kind = 'account.signup_existing' "
                   "AND to_addr = 'ana@example.com' AND user_id = '" +
                   u->id + "'"),
            1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'user.signup_existing'"), 1);
  // The password of the first sign-up still logs in; the second one's does not.
  EXPECT_TRUE(accounts_->Login({"ana@example.com", "correct horse"}, "", "").ok());
  EXPECT_FALSE(accounts_->Login({"ana@example.com", "0123456789"}, "", "").ok());
}

TEST_P(AccountsTest, SignUpRefusesWeakPasswordsAndCleansNames) {
  const auto password_error = [&](const std::string& password) {
    auto r = accounts_->SignUp({"weak@example.com", password, "Wanda Weak"}, "");
    EXPECT_FALSE(r.ok()) << password;
    return r.ok() ? "" : r.status().fields().at("password");
  };
  EXPECT_EQ(password_error("aaaaaaaaaa"), "uses too few different characters");
  EXPECT_EQ(password_error("weak@example.com"), "must not be based on your email address or name");
  EXPECT_EQ(password_error("WandaWeak2024"), "must not be based on your email address or name");
  EXPECT_EQ(password_error("Password123!"),
            "is one of the most common passwords; choose one that others are unlikely to use");
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users"), 0);

  // Bidirectional controls and zero-width characters are taken out of the name.
  auto u = accounts_->SignUp(
      {"rtl@example.com", "correct-horse-battery", "  Eve\u202E\u200Blyn\u2066 Smith\u2069 "}, "");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->name, "Evelyn Smith");
  // A name of invisible characters only is no name.
  auto invisible =
      accounts_->SignUp({"z@example.com", "correct-horse-battery", "\u200B\u200D"}, "");
  ASSERT_FALSE(invisible.ok());
  EXPECT_EQ(invisible.status().fields().at("name"), "is required");

  // A password change follows the same rules.
  const Principal p = LogIn("rtl@example.com", "correct-horse-battery");
  Status weak = accounts_->ChangePassword(p, {"correct-horse-battery", "EvelynSmith!!"});
  ASSERT_FALSE(weak.ok());
  EXPECT_EQ(weak.fields().at("new_password"), "must not be based on your email address or name");
}

TEST_P(AccountsTest, LoginSessionsExpireAndThrottlingEndsWithItsWindow) {
  SignUp("b@example.com");
  auto wrong = accounts_->Login({"b@example.com", "nope-nope-nope"}, "ip", "ua");
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated);
  auto unknown = accounts_->Login({"zz@example.com", "0123456789"}, "ip", "ua");
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(unknown.status().message(), wrong.status().message());

  auto ok = accounts_->Login({"B@example.com", "0123456789"}, "ip", "ua");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->expires_at, clock_.Now() + std::chrono::hours(24));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM sessions WHERE token_hash = ?", {Sha256Hex(ok->token)}),
            1);
  auto p = accounts_->Authenticate(ok->token, false, "ip");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->user.email, "b@example.com");
  // A day later the session has expired.
  clock_.Advance(std::chrono::hours(24) + kOneSecond);
  EXPECT_EQ(accounts_->Authenticate(ok->token, false, "ip").status().code(),
            StatusCode::kUnauthenticated);
  // A session that is ended by log-out no longer works either.
  Principal again = LogIn("b@example.com");
  ASSERT_TRUE(accounts_->Logout(again).ok());

  for (int i = 0; i < 3; ++i) (void)accounts_->Login({"b@example.com", "wrong-wrong"}, "ip", "ua");
  auto locked = accounts_->Login({"b@example.com", "0123456789"}, "ip", "ua");
  EXPECT_EQ(locked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GE(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'login.throttled'"), 1);
  // The window passes: the right password works again.
  clock_.Advance(std::chrono::minutes(15) + kOneSecond);
  EXPECT_TRUE(accounts_->Login({"b@example.com", "0123456789"}, "ip", "ua").ok());
}

// Wrong passwords from a stranger's address lock that address out of the account, and
// slow the owner's other addresses down with a growing wait, never a lock.
TEST_P(AccountsTest, AStrangerCannotLockTheOwnerOut) {
  SignUp("d@example.com");
  const int max = 3;  // the fixture's login_max_failures
  for (int i = 0; i < max; ++i) {
    EXPECT_EQ(
        accounts_->Login({"d@example.com", "guess-guess"}, "198.51.100.1", "ua").status().code(),
        StatusCode::kUnauthenticated);
  }
  EXPECT_EQ(accounts_->Login({"d@example.com", "0123456789"}, "198.51.100.1", "ua").status().code(),
            StatusCode::kResourceExhausted)
      << "the stranger's address is locked out, even with the right password";
  // The owner, elsewhere, waits a second after the last failure, then gets in.
  auto early = accounts_->Login({"d@example.com", "0123456789"}, "203.0.113.5", "ua");
  EXPECT_EQ(early.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(early.status().message().find("try again in 1 s"), std::string::npos)
      << early.status().message();
  clock_.Advance(kOneSecond);
  EXPECT_TRUE(accounts_->Login({"d@example.com", "0123456789"}, "203.0.113.5", "ua").ok());
  // A success clears the count; failures from many addresses make the wait grow (each
  // attempt after the wait of the one before, so that it counts).
  for (int i = 0; i < max + 3; ++i) {
    clock_.Advance(Seconds(61));
    EXPECT_EQ(accounts_
                  ->Login({"d@example.com", "guess-guess"},
                          "198.51.100." + std::to_string(10 + i % 3), "ua")
                  .status()
                  .code(),
              StatusCode::kUnauthenticated)
        << i;
  }
  auto waiting = accounts_->Login({"d@example.com", "0123456789"}, "203.0.113.5", "ua");
  ASSERT_EQ(waiting.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(waiting.status().message().find("try again in 8 s"), std::string::npos)
      << waiting.status().message();
  clock_.Advance(Seconds(8));
  EXPECT_TRUE(accounts_->Login({"d@example.com", "0123456789"}, "203.0.113.5", "ua").ok());
}

// Attempts that arrive at the same moment each count the ones before them: no more than
// login_max_failures passwords are checked for an address, however many come at once (on
// one instance or several: the count is the database's).
TEST_P(AccountsTest, AttemptsAtTheSameMomentCountEachOther) {
  SignUp("e@example.com");
  constexpr int kAttempts = 8;
  const int max = 3;  // the fixture's login_max_failures
  std::vector<StatusCode> codes(kAttempts, StatusCode::kOk);
  std::latch start(kAttempts);
  std::vector<std::thread> threads;
  for (int i = 0; i < kAttempts; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      codes[static_cast<size_t>(i)] =
          accounts_->Login({"e@example.com", "guess-guess"}, "198.51.100.7", "ua").status().code();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(codes.begin(), codes.end(), StatusCode::kUnauthenticated), max);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), StatusCode::kResourceExhausted),
            kAttempts - max);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM login_failures WHERE email = 'e@example.com'"), max);
  // The owner, from elsewhere after the growing wait, gets in: a right password strikes
  // its own attempt off with the others.
  clock_.Advance(kOneSecond);
  auto owner = accounts_->Login({"e@example.com", "0123456789"}, "203.0.113.9", "ua");
  EXPECT_TRUE(owner.ok()) << owner.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM login_failures WHERE email = 'e@example.com'"), 0);
}

TEST_P(AccountsTest, ApiKeysAreShownOnceAndRevocable) {
  SignUp("c@example.com");
  Principal p = LogIn("c@example.com");
  auto key = accounts_->CreateApiKey(p, "ci", {"read", "write"});
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM api_keys WHERE token_hash = ?", {Sha256Hex(key->secret)}),
            1);
  EXPECT_EQ(accounts_->CreateApiKey(p, "", {"read"}).status().fields().count("name"), 1u);
  auto via_key = accounts_->Authenticate(key->secret, false, "");
  ASSERT_TRUE(via_key.ok());
  EXPECT_EQ(via_key->via, Principal::Via::kApiKey);
  // last_used_at moves at most once a minute, so authenticated reads stay reads.
  auto keys = accounts_->ListApiKeys(p);
  ASSERT_EQ(keys->size(), 1u);
  EXPECT_EQ((*keys)[0].last_used_at, clock_.Now());
  // API keys are not accepted as cookies.
  EXPECT_FALSE(accounts_->Authenticate(key->secret, true, "").ok());
  ASSERT_TRUE(accounts_->RevokeApiKey(p, key->key.id).ok());
  EXPECT_FALSE(accounts_->Authenticate(key->secret, false, "").ok());
  EXPECT_EQ(accounts_->RevokeApiKey(p, key->key.id).code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts_->Authenticate("gpx_a_whatever", false, "").status().code(),
            StatusCode::kUnauthenticated);
}

// The credential cache (credential_cache.h): another instance's revocation, which this
// process hears nothing of, takes effect once the entry's second is over; this process's
// own changes at once; and no entry outlives its session.
TEST_P(AccountsTest, ACachedCredentialLastsAtMostItsSecondAndItsOwnLife) {
  SignUp("d@example.com");
  Principal p = LogIn("d@example.com");
  auto key = accounts_->CreateApiKey(p, "ci", {"read", "write"});
  ASSERT_TRUE(key.ok());
  ASSERT_TRUE(accounts_->Authenticate(key->secret, false, "10.0.0.2").ok());
  // Another instance revokes it: the database changes, this process is not told.
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                    return tx
                        .Exec("UPDATE api_keys SET revoked_at = ? WHERE id = ?",
                              {ToUnixMicros(clock_.Now()), key->key.id})
                        .status();
                  })
                  .ok());
  clock_.Advance(std::chrono::milliseconds(999));
  auto cached = accounts_->Authenticate(key->secret, false, "10.0.0.3");
  ASSERT_TRUE(cached.ok()) << "within its second the entry stands";
  EXPECT_EQ(cached->ip, "10.0.0.3") << "the address is the request's, not the cached one's";
  EXPECT_EQ(cached->credential_id, key->key.id);
  EXPECT_EQ(cached->scopes, (std::vector<std::string>{"read", "write"}));
  clock_.Advance(std::chrono::milliseconds(1));
  EXPECT_EQ(accounts_->Authenticate(key->secret, false, "").status().code(),
            StatusCode::kUnauthenticated);

  // This process's own changes: a role granted and a session revoked, at once.
  auto login = accounts_->Login({"d@example.com", "0123456789"}, "10.0.0.1", "test");
  ASSERT_TRUE(login.ok());
  auto before = accounts_->Authenticate(login->token, true, "");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->via, Principal::Via::kCookieSession);
  EXPECT_FALSE(before->user.HasRole(kRoleProvider));
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                    return GrantRole(tx, clock_.Now(), p.user.id, kRoleProvider, "test");
                  })
                  .ok());
  auto after = accounts_->Authenticate(login->token, false, "");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->user.HasRole(kRoleProvider));
  EXPECT_EQ(after->via, Principal::Via::kBearerSession) << "bearer or cookie is the request's";
  ASSERT_TRUE(accounts_->RevokeSession(p, after->credential_id).ok());
  EXPECT_FALSE(accounts_->Authenticate(login->token, false, "").ok());

  // A session ends at its expiry even when its entry was made just before.
  auto last = accounts_->Login({"d@example.com", "0123456789"}, "10.0.0.1", "test");
  ASSERT_TRUE(last.ok());
  // Used every 11 hours (its idle limit is 12), then just before its 24 hours are over.
  clock_.Advance(std::chrono::hours(11));
  ASSERT_TRUE(accounts_->Authenticate(last->token, false, "").ok());
  clock_.Advance(std::chrono::hours(11));
  ASSERT_TRUE(accounts_->Authenticate(last->token, false, "").ok());
  clock_.Advance(std::chrono::hours(2) - std::chrono::milliseconds(500));
  ASSERT_TRUE(accounts_->Authenticate(last->token, false, "").ok());
  clock_.Advance(std::chrono::milliseconds(500));
  EXPECT_FALSE(accounts_->Authenticate(last->token, false, "").ok());
}

TEST_P(AccountsTest, WithoutTheCacheEveryRequestAsksTheStore) {
  AccountsOptions o = FastAccountsOptions();
  o.credential_cache_ttl = Duration::zero();
  Accounts uncached(db(), o);
  SignUp("e@example.com");
  auto login = uncached.Login({"e@example.com", "0123456789"}, "10.0.0.1", "test");
  ASSERT_TRUE(login.ok());
  ASSERT_TRUE(uncached.Authenticate(login->token, false, "").ok());
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                    return tx
                        .Exec("UPDATE sessions SET revoked_at = ? WHERE token_hash = ?",
                              {ToUnixMicros(clock_.Now()), Sha256Hex(login->token)})
                        .status();
                  })
                  .ok());
  EXPECT_FALSE(uncached.Authenticate(login->token, false, "").ok());
}

TEST_P(AccountsTest, CreateAdminGrantsTheRole) {
  auto admin = accounts_->CreateAdmin("root@example.com", "0123456789", "Root");
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->HasRole(kRoleAdmin));
  EXPECT_TRUE(accounts_->CreateAdmin("root@example.com", "9876543210", "Root").ok());
  EXPECT_TRUE(accounts_->Login({"root@example.com", "9876543210"}, "", "").ok());
}

TEST_P(AccountsTest, ASignUpWhoseCommitOutcomeIsUnknownIsNeverDoubled) {
  // The commit went through but the answer was lost: the retry finds the account.
  faulty().FailCommit("INSERT INTO users", /*committed=*/true);
  auto first = accounts_->SignUp({"d@example.com", "0123456789", "D"}, "");
  EXPECT_EQ(first.status().code(), StatusCode::kOutcomeUnknown);
  // The retry gets the same answer as any sign-up, and no second account.
  auto retry = accounts_->SignUp({"d@example.com", "0123456789", "D"}, "");
  EXPECT_TRUE(retry.ok()) << retry.status().ToString();
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE email = 'd@example.com'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM user_roles"), 1);
  // It did not commit: the retry creates the account once.
  faulty().FailCommit("INSERT INTO users", /*committed=*/false);
  EXPECT_EQ(accounts_->SignUp({"e@example.com", "0123456789", "E"}, "").status().code(),
            StatusCode::kOutcomeUnknown);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE email = 'e@example.com'"), 0);
  EXPECT_TRUE(accounts_->SignUp({"e@example.com", "0123456789", "E"}, "").ok());
  // A conflict on the audit row is retried as a whole transaction.
  faulty().FailStatement("INSERT INTO audit_events", Aborted("injected conflict"));
  EXPECT_TRUE(accounts_->SignUp({"f@example.com", "0123456789", "F"}, "").ok());
  EXPECT_EQ(Number("SELECT COUNT(*) FROM users WHERE email = 'f@example.com'"), 1);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM audit_events WHERE action = 'user.signup' "
                   "AND subject IN (SELECT id FROM users WHERE email = 'f@example.com')"),
            1);
}

TEST_P(AccountsTest, ApiKeysActWithTheirScopesOnlyAndCannotMintCredentials) {
  SignUp("k@example.com");
  Principal p = LogIn("k@example.com");
  ASSERT_TRUE(db().Transact([&](store::Tx& tx) {
                    return GrantRole(tx, clock_.Now(), p.user.id, kRoleProvider, p.user.id);
                  })
                  .ok());
  p = LogIn("k@example.com");
  // Scopes are checked against the caller's roles and named by index.
  auto bad = accounts_->CreateApiKey(p, "x", {"read", "admin", "sudo", "read"});
  ASSERT_EQ(bad.status().code(), StatusCode::kValidationFailed);
  EXPECT_TRUE(bad.status().fields().count("scopes[1]")) << "admin is for admins";
  EXPECT_TRUE(bad.status().fields().count("scopes[2]")) << "no such scope";
  EXPECT_TRUE(bad.status().fields().count("scopes[3]")) << "named twice";
  EXPECT_TRUE(accounts_->CreateApiKey(p, "x", {}).status().fields().count("scopes"));
  EXPECT_EQ(Number("SELECT COUNT(*) FROM api_keys"), 0);

  auto reader = accounts_->CreateApiKey(p, "reader", {"read"});
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ(reader->key.scopes, (std::vector<std::string>{"read"}));
  auto as_reader = accounts_->Authenticate(reader->secret, false, "");
  ASSERT_TRUE(as_reader.ok());
  EXPECT_FALSE(as_reader->can_write);
  EXPECT_TRUE(as_reader->HasScope(kScopeRead));
  EXPECT_FALSE(as_reader->HasScope(kScopeWrite));
  EXPECT_FALSE(as_reader->HasScope(kScopeProvider));
  EXPECT_FALSE(as_reader->user.HasRole(kRoleProvider)) << "no provider scope, no provider role";
  EXPECT_FALSE(as_reader->IsProvider(p.user.id)) << "the key acts as a customer";
  EXPECT_TRUE(as_reader->user.HasRole(kRoleCustomer));

  auto full = accounts_->CreateApiKey(p, "ops", {"provider", "write", "read"});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->key.scopes, (std::vector<std::string>{"read", "write", "provider"}));
  auto as_full = accounts_->Authenticate(full->secret, false, "");
  ASSERT_TRUE(as_full.ok());
  EXPECT_TRUE(as_full->can_write);
  EXPECT_EQ(as_full->scopes, (std::vector<std::string>{"read", "write", "provider"}));
  EXPECT_TRUE(as_full->HasScope(kScopeProvider));
  EXPECT_FALSE(as_full->HasScope(kScopeAdmin));
  EXPECT_TRUE(as_full->user.HasRole(kRoleProvider));
  EXPECT_TRUE(as_full->IsProvider(p.user.id));
  EXPECT_FALSE(as_full->IsProvider("usr_someone_else"));
  // A session has every scope.
  EXPECT_TRUE(p.HasScope(kScopeAdmin));

  // A key, whatever its scopes, cannot make credentials or change the password.
  EXPECT_EQ(accounts_->CreateApiKey(*as_full, "more", {"read"}).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(accounts_->ChangePassword(*as_full, {"0123456789", "a-new-password-1"}).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(Number("SELECT COUNT(*) FROM api_keys"), 2);
  auto keys = accounts_->ListApiKeys(p);
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ((*keys)[0].scopes, (std::vector<std::string>{"read"}));
}

TEST_P(AccountsTest, SessionsAreListedRevocableAndEndWhenIdle) {
  SignUp("s@example.com");
  Principal laptop = LogIn("s@example.com");
  clock_.Advance(kOneMinute);
  Principal phone = LogIn("s@example.com");
  auto list = accounts_->ListSessions(phone);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, phone.credential_id) << "newest first";
  EXPECT_TRUE((*list)[0].current);
  EXPECT_FALSE((*list)[1].current);
  EXPECT_EQ((*list)[1].ip, "10.0.0.1");
  EXPECT_EQ((*list)[1].user_agent, "test");

  // Another user's session cannot be ended, nor can one that does not exist.
  SignUp("t@example.com");
  Principal other = LogIn("t@example.com");
  EXPECT_EQ(accounts_->RevokeSession(other, laptop.credential_id).code(), StatusCode::kNotFound);
  ASSERT_TRUE(accounts_->RevokeSession(phone, laptop.credential_id).ok());
  EXPECT_EQ(accounts_->RevokeSession(phone, laptop.credential_id).code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts_->ListSessions(phone)->size(), 1u);

  // "Log out everywhere else" keeps the caller's session only.
  Principal third = LogIn("s@example.com");
  auto n = accounts_->RevokeOtherSessions(third);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(accounts_->ListSessions(third)->size(), 1u);
  EXPECT_EQ(accounts_->ListSessions(other)->size(), 1u) << "the other user's stay";

  // A session used within the idle timeout lives on; one left idle ends.
  const std::string token = accounts_->Login({"s@example.com", "0123456789"}, "", "")->token;
  clock_.Advance(std::chrono::hours(11));
  ASSERT_TRUE(accounts_->Authenticate(token, false, "").ok()) << "11 h idle: still live";
  clock_.Advance(std::chrono::hours(11));
  ASSERT_TRUE(accounts_->Authenticate(token, false, "").ok()) << "used 11 h ago: still live";
  clock_.Advance(std::chrono::hours(12) + kOneMinute);
  EXPECT_EQ(accounts_->Authenticate(token, false, "").status().code(), StatusCode::kUnauthenticated)
      << "idle for more than 12 h";
}

TEST_P(AccountsTest, APasswordChangeChecksTheOldOneAndEndsOtherSessions) {
  SignUp("p@example.com");
  Principal a = LogIn("p@example.com");
  Principal b = LogIn("p@example.com");
  auto key = accounts_->CreateApiKey(a, "ci", {"read"});
  ASSERT_TRUE(key.ok());
  auto wrong = accounts_->ChangePassword(a, {"not-the-password", "a-new-password-1"});
  EXPECT_TRUE(wrong.fields().count("current_password")) << wrong.ToString();
  EXPECT_TRUE(accounts_->ChangePassword(a, {"0123456789", "short"}).fields().count("new_password"));
  const Status both = accounts_->ChangePassword(a, {"not-the-password", "short"});
  EXPECT_TRUE(both.fields().count("new_password") && both.fields().count("current_password"))
      << both.ToString();
  EXPECT_TRUE(
      accounts_->ChangePassword(a, {"0123456789", "0123456789"}).fields().count("new_password"));
  EXPECT_EQ(accounts_->ListSessions(a)->size(), 2u) << "refusals end nothing";

  ASSERT_TRUE(accounts_->ChangePassword(a, {"0123456789", "a-new-password-1"}).ok());
  auto sessions = accounts_->ListSessions(a);
  ASSERT_EQ(sessions->size(), 1u);
  EXPECT_EQ((*sessions)[0].id, a.credential_id) << "the session that changed it stays";
  EXPECT_FALSE(accounts_->Login({"p@example.com", "0123456789"}, "", "").ok());
  EXPECT_TRUE(accounts_->Login({"p@example.com", "a-new-password-1"}, "", "").ok());
  EXPECT_TRUE(accounts_->Authenticate(key->secret, false, "").ok())
      << "API keys are listed and revoked on their own";
}

GPUNEX_INSTANTIATE_BACKENDS(AccountsTest);

TEST(CheckEmail, AcceptsCommonRejectsBroken) {
  std::string n;
  EXPECT_EQ(CheckEmail("a.b+c@sub.example.co", &n), "");
  for (const char* bad :
       {"", "a", "a@", "@b.co", "a@b", "a..b@c.co", "a@-b.co", "a@b.c0", "a b@c.co"}) {
    EXPECT_NE(CheckEmail(bad, &n), "") << bad;
  }
}

}  // namespace
}  // namespace gpunex::platform::accounts
