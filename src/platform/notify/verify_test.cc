// Email verification (verify.h) and the hold, release, expiry and hourly limit of the
// emails that EnqueueEmail queues for accounts, on both store backends.
#include "platform/notify/verify.h"

#include <gtest/gtest.h>

#include "common/ids.h"
#include "common/testing/fake_clock.h"
#include "platform/accounts/directory.h"
#include "platform/notify/notify.h"
#include "platform/notify/test_util.h"

namespace gpunex::platform::notify {
namespace {

class VerifyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto db = test::OpenMigratedDb(GetParam());
    if (db.status().code() == StatusCode::kFailedPrecondition)
      GTEST_SKIP() << db.status().message();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    test_db_ = std::move(db).value();
    db_ = &test_db_->db();
    ASSERT_TRUE(test::InsertUser(*db_, "usr_alice", clock_.Now()).ok());
    ASSERT_TRUE(test::InsertUser(*db_, "usr_bob", clock_.Now()).ok());
    VerifierOptions o;
    o.public_url = "https://gpunex.test";
    o.clock = &clock_;
    o.account_email = accounts::AccountEmail;
    auto v = EmailVerifier::Open(*db_, o);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    verifier_ = std::move(*v);
  }

  // Queues an email for `user` to `to`, as the domain does.
  void Enqueue(const std::string& user, const std::string& to, const std::string& kind = "k") {
    Status st = db_->Transact([&](store::Tx& tx) {
      return EnqueueEmail(tx, clock_.Now(), {to, "gpunex: s", "body", kind, user}, "gpunex.test");
    });
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // "status:kind" of every email to `to`, oldest first.
  std::vector<std::string> Mail(const std::string& to) {
    auto rows = test::QueryDb(*db_,
                              "SELECT status, kind FROM email_outbox WHERE address = ? "
                              "ORDER BY created_at, id",
                              {to});
    EXPECT_TRUE(rows.ok());
    std::vector<std::string> out;
    if (rows.ok()) {
      for (const store::Row& r : *rows) out.push_back(r["status"].Str() + ":" + r["kind"].Str());
    }
    return out;
  }

  // The token of the newest link to `to`, read from its email.
  std::string LinkToken(const std::string& to) {
    auto rows = test::QueryDb(*db_,
                              "SELECT body FROM email_outbox WHERE address = ? AND kind = "
                              "'email.verify' ORDER BY created_at DESC, id DESC",
                              {to});
    EXPECT_TRUE(rows.ok() && !rows->empty());
    if (!rows.ok() || rows->empty()) return "";
    const std::string body = rows->at(0)["body"].Str();
    const std::string marker = "/#/verify-email?token=";
    const size_t at = body.find(marker);
    EXPECT_NE(at, std::string::npos) << body;
    if (at == std::string::npos) return "";
    const size_t start = at + marker.size();
    return body.substr(start, body.find('\n', start) - start);
  }

  gpunex::testing::FakeClock clock_;
  std::unique_ptr<store::testing::TestDatabase> test_db_;
  store::Database* db_ = nullptr;
  std::unique_ptr<EmailVerifier> verifier_;
};

// The account's own address (asked of accounts through VerifierOptions::account_email)
// comes first, the others follow by address.
TEST_P(VerifyTest, TheListHasTheAccountsOwnAddressFirst) {
  Enqueue("usr_alice", "zed@example.com");
  Enqueue("usr_alice", "usr_alice@example.com");
  Enqueue("usr_alice", "ann@example.com");
  auto listed = verifier_->List(*db_, "usr_alice");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].address, "usr_alice@example.com");
  EXPECT_TRUE((*listed)[0].account);
  EXPECT_EQ((*listed)[1].address, "ann@example.com");
  EXPECT_FALSE((*listed)[1].account);
  EXPECT_EQ((*listed)[2].address, "zed@example.com");
  EXPECT_FALSE((*listed)[2].account);
  // Without the accounts' reader there is no verifier.
  VerifierOptions o;
  o.clock = &clock_;
  EXPECT_EQ(EmailVerifier::Open(*db_, o).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(VerifyTest, EmailsWaitForTheLinkAndGoWhenItIsOpened) {
  Enqueue("usr_alice", "Contact@Example.com");
  Enqueue("usr_alice", "contact@example.com");
  EXPECT_EQ(Mail("contact@example.com"), (std::vector<std::string>{"held:k", "held:k"}));
  // The sender's pass sends the one link they wait on, once.
  ASSERT_TRUE(verifier_->SendDueLinks(*db_).ok());
  ASSERT_TRUE(verifier_->SendDueLinks(*db_).ok());
  EXPECT_EQ(Mail("contact@example.com"),
            (std::vector<std::string>{"held:k", "held:k", "pending:email.verify"}));
  auto listed = verifier_->List(*db_, "usr_alice");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].address, "contact@example.com");
  EXPECT_FALSE((*listed)[0].account);
  EXPECT_EQ((*listed)[0].held_emails, 2);

  clock_.Advance(std::chrono::hours(1));
  auto v = verifier_->Verify(*db_, LinkToken("contact@example.com"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->user_id, "usr_alice");
  EXPECT_EQ(v->address, "contact@example.com");
  EXPECT_FALSE(v->already);
  EXPECT_EQ(v->released, 2);
  EXPECT_EQ(Mail("contact@example.com"),
            (std::vector<std::string>{"pending:k", "pending:k", "pending:email.verify"}));
  auto due = test::QueryDb(*db_, "SELECT COUNT(*) AS n FROM email_outbox WHERE next_attempt_at = ?",
                           {ToUnixMicros(clock_.Now())});
  ASSERT_TRUE(due.ok());
  EXPECT_EQ(due->at(0)["n"].Int(), 2);  // due now, not when they were queued
  // Later emails go at once; verified for Alice, not for Bob.
  Enqueue("usr_alice", "contact@example.com");
  Enqueue("usr_bob", "contact@example.com");
  EXPECT_EQ(Mail("contact@example.com").back(), "held:k");
  EXPECT_EQ(Mail("contact@example.com")[3], "pending:k");
  auto alice = verifier_->IsVerified(*db_, "usr_alice", "CONTACT@example.com");
  auto bob = verifier_->IsVerified(*db_, "usr_bob", "contact@example.com");
  ASSERT_TRUE(alice.ok() && bob.ok());
  EXPECT_TRUE(*alice);
  EXPECT_FALSE(*bob);
  // Opening the link again changes nothing.
  auto again = verifier_->Verify(*db_, LinkToken("contact@example.com"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already);
}

TEST_P(VerifyTest, BadAndExpiredLinksAreRefusedNamingTheToken) {
  const Timestamp expires = clock_.Now() + std::chrono::hours(48);
  ASSERT_TRUE(db_->Transact([&](store::Tx& tx) {
                   return verifier_->SendLink(tx, clock_.Now(), "usr_alice", "a@example.com");
                 })
                  .ok());
  const std::string good = verifier_->MakeToken("usr_alice", "a@example.com", expires);
  EXPECT_EQ(LinkToken("a@example.com"), good);
  const auto refused = [&](const std::string& token) {
    auto v = verifier_->Verify(*db_, token);
    EXPECT_FALSE(v.ok()) << token;
    return v.ok() ? "" : v.status().fields().at("token");
  };
  const std::string invalid = "is not a valid verification link";
  const size_t dot = good.find('.');
  EXPECT_EQ(refused(""), invalid);
  EXPECT_EQ(refused("x.y"), invalid);
  EXPECT_EQ(refused(good.substr(0, dot)), invalid);
  // Another address under the same signature.
  EXPECT_EQ(refused(Base64UrlEncode("usr_alice\nb@example.com\n99999999999") + good.substr(dot)),
            invalid);
  // Signed, but for an address that was never recorded for the account.
  EXPECT_EQ(refused(verifier_->MakeToken("usr_bob", "a@example.com", expires)), invalid);
  // Signed with another key.
  VerifierOptions o;
  o.clock = &clock_;
  o.account_email = accounts::AccountEmail;
  auto other_db = test::OpenMigratedDb(GetParam());
  ASSERT_TRUE(other_db.ok());
  auto other = EmailVerifier::Open((*other_db)->db(), o);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(refused((*other)->MakeToken("usr_alice", "a@example.com", expires)), invalid);

  clock_.Advance(std::chrono::hours(48));
  EXPECT_EQ(refused(good), "has expired; ask for a new link on your account page after logging in");
  auto verified = verifier_->IsVerified(*db_, "usr_alice", "a@example.com");
  ASSERT_TRUE(verified.ok());
  EXPECT_FALSE(*verified);
}

TEST_P(VerifyTest, ResendWaitsAndOnlyForTheUsersOwnUnverifiedAddresses) {
  ASSERT_TRUE(db_->Transact([&](store::Tx& tx) {
                   return verifier_->SendLink(tx, clock_.Now(), "usr_alice", "a@example.com");
                 })
                  .ok());
  int64_t retry = 0;
  Status st = verifier_->Resend(*db_, "usr_alice", "a@example.com", &retry);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(retry, 600);
  clock_.Advance(std::chrono::minutes(10));
  EXPECT_TRUE(verifier_->Resend(*db_, "usr_alice", "A@example.com").ok());
  EXPECT_EQ(Mail("a@example.com"),
            (std::vector<std::string>{"pending:email.verify", "pending:email.verify"}));
  EXPECT_EQ(verifier_->Resend(*db_, "usr_bob", "a@example.com").code(), StatusCode::kNotFound);
  ASSERT_TRUE(verifier_->Verify(*db_, LinkToken("a@example.com")).ok());
  clock_.Advance(std::chrono::minutes(10));
  EXPECT_EQ(verifier_->Resend(*db_, "usr_alice", "a@example.com").code(),
            StatusCode::kFailedPrecondition);
}

TEST_P(VerifyTest, HeldEmailsExpireAfterAWeek) {
  Enqueue("usr_alice", "late@example.com");
  clock_.Advance(kHeldEmailLifetime - std::chrono::seconds(1));
  ASSERT_TRUE(verifier_->SendDueLinks(*db_).ok());
  EXPECT_EQ(Mail("late@example.com"), (std::vector<std::string>{"held:k", "pending:email.verify"}));
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(verifier_->SendDueLinks(*db_).ok());
  EXPECT_EQ(Mail("late@example.com"),
            (std::vector<std::string>{"expired:k", "pending:email.verify"}));
  auto body = test::QueryDb(*db_,
                            "SELECT COUNT(*) AS n FROM email_outbox WHERE status = 'expired' "
                            "AND body IS NULL");
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->at(0)["n"].Int(), 1);
  // A link opened later releases nothing that expired.
  auto v = verifier_->Verify(*db_, LinkToken("late@example.com"));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->released, 0);
}

TEST_P(VerifyTest, AnAccountGetsAtMostThirtyEmailsAnHour) {
  ASSERT_TRUE(db_->Transact([&](store::Tx& tx) {
                   return EmailVerifier::MarkVerified(tx, clock_.Now(), "usr_alice",
                                                      "usr_alice@example.com");
                 })
                  .ok());
  for (int i = 0; i < kMaxEmailsPerAccountPerHour + 5; ++i) {
    Enqueue("usr_alice", "usr_alice@example.com");
    clock_.Advance(std::chrono::seconds(10));
  }
  std::vector<std::string> mail = Mail("usr_alice@example.com");
  EXPECT_EQ(std::count(mail.begin(), mail.end(), "pending:k"), kMaxEmailsPerAccountPerHour);
  EXPECT_EQ(std::count(mail.begin(), mail.end(), "suppressed:k"), 5);
  // Other accounts are not affected; an hour after the first, the account gets mail again.
  Enqueue("usr_bob", "usr_bob@example.com");
  EXPECT_EQ(Mail("usr_bob@example.com"), (std::vector<std::string>{"held:k"}));
  clock_.Advance(std::chrono::minutes(55));
  Enqueue("usr_alice", "usr_alice@example.com");
  EXPECT_EQ(Mail("usr_alice@example.com").back(), "pending:k");
  // The platform's own mail (no account) is neither held nor limited.
  for (int i = 0; i < 3; ++i) Enqueue("", "ops@example.com");
  EXPECT_EQ(Mail("ops@example.com"), (std::vector<std::string>{}));  // no address recorded
  auto ops = test::QueryDb(*db_,
                           "SELECT COUNT(*) AS n FROM email_outbox WHERE to_addr = "
                           "'ops@example.com' AND status = 'pending'");
  ASSERT_TRUE(ops.ok());
  EXPECT_EQ(ops->at(0)["n"].Int(), 3);
}

TEST_P(VerifyTest, TheKeyIsMadeOnceAndSharedByInstances) {
  VerifierOptions o;
  o.clock = &clock_;
  o.account_email = accounts::AccountEmail;
  auto second = EmailVerifier::Open(*db_, o);
  ASSERT_TRUE(second.ok());
  const Timestamp expires = clock_.Now() + std::chrono::hours(1);
  EXPECT_EQ((*second)->MakeToken("usr_alice", "a@example.com", expires),
            verifier_->MakeToken("usr_alice", "a@example.com", expires));
  auto keys = test::QueryDb(*db_, "SELECT COUNT(*) AS n FROM signing_keys");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(keys->at(0)["n"].Int(), 1);
}

TEST(GreetingName, IsBoundedAndWithoutInvisibleOrControlCharacters) {
  EXPECT_EQ(GreetingName(""), "there");
  EXPECT_EQ(GreetingName("\u200B\u202E"), "there");
  EXPECT_EQ(GreetingName("Ada\u202E Love\nlace"), "Ada Lovelace");
  EXPECT_EQ(GreetingName(std::string(200, 'x')), std::string(40, 'x') + "\u2026");
  EXPECT_EQ(GreetingName("Zo\u00EB"), "Zo\u00EB");
}

INSTANTIATE_TEST_SUITE_P(Backends, VerifyTest, ::testing::ValuesIn(store::testing::TestBackends()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace gpunex::platform::notify
